// Webhook integration operations: HTTP shape only. The unscoped paths
// (/v1/rest/integration) take the platform from the token; the security
// handler has already checked it against the path where there is one.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  listIntegrations,
  patchIntegration,
  updateIntegration,
} from './integrations.service.ts';
import { principalOf } from '../platform/principal.rules.ts';

type Ops =
  | 'createIntegration'
  | 'updateIntegration'
  | 'createIntegrationUnscoped'
  | 'updateIntegrationUnscoped'
  | 'listIntegrations'
  | 'getIntegration'
  | 'patchIntegration'
  | 'deleteIntegration';

export function integrationsHandlers(deps: Deps): HandlerMap<Ops> {
  return {
    createIntegration: async (c) => {
      const integration = await createIntegration(deps, principalOf(c), c.request.requestBody);
      return { status: 201, body: { code: 2011, message: 'Created', integration } };
    },
    createIntegrationUnscoped: async (c) => {
      const integration = await createIntegration(deps, principalOf(c), c.request.requestBody);
      return { status: 201, body: { code: 2011, message: 'Created', integration } };
    },
    updateIntegration: async (c) => {
      const integration = await updateIntegration(deps, principalOf(c), c.request.requestBody);
      return { status: 200, body: { code: 2001, message: 'OK', integration } };
    },
    updateIntegrationUnscoped: async (c) => {
      const integration = await updateIntegration(deps, principalOf(c), c.request.requestBody);
      return { status: 200, body: { code: 2001, message: 'OK', integration } };
    },
    listIntegrations: async (c) => {
      const q = c.request.query;
      const body = await listIntegrations(deps, principalOf(c), { org_id: q.org_id, cursor: q.cursor, limit: q.limit });
      return { status: 200, body };
    },
    getIntegration: async (c) => {
      const body = await getIntegration(deps, principalOf(c), c.request.params.integration_id);
      return { status: 200, body };
    },
    patchIntegration: async (c) => {
      const integration = await patchIntegration(deps, principalOf(c), c.request.params.integration_id, c.request.requestBody);
      return { status: 200, body: { code: 2001, message: 'OK', integration } };
    },
    deleteIntegration: async (c) => {
      await deleteIntegration(deps, principalOf(c), c.request.params.integration_id);
      return { status: 204, body: undefined };
    },
  };
}
