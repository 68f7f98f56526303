// createPrivacyRequest, listPrivacyRequests, getPrivacyRequest,
// listPrivacySuppressions: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { principalOf } from '../platform/principal.rules.ts';
import { createRequest, getRequest, listRequestPage, listSuppressionPage } from './privacy.service.ts';

export function privacyHandlers(
  deps: Deps,
): HandlerMap<'createPrivacyRequest' | 'listPrivacyRequests' | 'getPrivacyRequest' | 'listPrivacySuppressions'> {
  return {
    createPrivacyRequest: async (c) => ({
      status: 202,
      body: await createRequest(deps, { via: 'api', principal: principalOf(c) }, c.request.params.org_id, c.request.requestBody),
    }),
    listPrivacyRequests: async (c) => {
      const q = c.request.query ?? {};
      return { status: 200, body: await listRequestPage(deps, principalOf(c), c.request.params.org_id, { cursor: q.cursor, limit: q.limit }) };
    },
    getPrivacyRequest: async (c) => ({
      status: 200,
      body: await getRequest(deps, principalOf(c), c.request.params.org_id, c.request.params.request_id),
    }),
    listPrivacySuppressions: async (c) => {
      const q = c.request.query ?? {};
      return { status: 200, body: await listSuppressionPage(deps, principalOf(c), c.request.params.org_id, { cursor: q.cursor, limit: q.limit }) };
    },
  };
}
