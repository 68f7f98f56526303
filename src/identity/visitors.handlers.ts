// getVisitor / listVisitors: HTTP shape only; the rules are in visitors.service.ts.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { principalOf } from '../platform/principal.rules.ts';
import { visitorDetail, visitorPage } from './visitors.service.ts';

export function visitorHandlers(deps: Deps): HandlerMap<'getVisitor' | 'listVisitors'> {
  return {
    getVisitor: async (c) => {
      const { org_id, core_id } = c.request.params;
      return { status: 200, body: await visitorDetail(deps, principalOf(c), org_id, core_id) };
    },
    listVisitors: async (c) => {
      const { org_id } = c.request.params;
      return { status: 200, body: await visitorPage(deps, principalOf(c), org_id, c.request.query ?? {}) };
    },
  };
}
