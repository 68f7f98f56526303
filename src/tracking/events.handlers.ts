// listEvents: HTTP shape only; the rules are in events.service.ts.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { principalOf } from '../platform/principal.rules.ts';
import { eventPage } from './events.service.ts';

export function eventReadHandlers(deps: Deps): HandlerMap<'listEvents'> {
  return {
    listEvents: async (c) => {
      const { org_id } = c.request.params;
      return { status: 200, body: await eventPage(deps, principalOf(c), org_id, c.request.query ?? {}) };
    },
  };
}
