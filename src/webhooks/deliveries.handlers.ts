// listDeliveries, getDelivery, retryDelivery, testIntegration: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { principalOf } from '../platform/principal.rules.ts';
import { getDelivery, listDeliveries, retryDelivery } from './deliveries.service.ts';
import { createIntegrationTester } from './integration-test.service.ts';

export function deliveriesHandlers(deps: Deps): HandlerMap<'listDeliveries' | 'getDelivery' | 'retryDelivery' | 'testIntegration'> {
  const tester = createIntegrationTester(deps);
  return {
    listDeliveries: async (c) => {
      const q = c.request.query ?? {};
      const body = await listDeliveries(deps, principalOf(c), c.request.params.org_id, {
        status: q.status,
        integration_id: q.integration_id,
        cursor: q.cursor,
        limit: q.limit,
      });
      return { status: 200, body };
    },
    getDelivery: async (c) => ({
      status: 200,
      body: await getDelivery(deps, principalOf(c), c.request.params.delivery_id),
    }),
    retryDelivery: async (c) => ({
      status: 200,
      body: await retryDelivery(deps, principalOf(c), c.request.params.delivery_id),
    }),
    testIntegration: async (c) => ({
      status: 200,
      body: await tester.test(principalOf(c), c.request.params.integration_id),
    }),
  };
}
