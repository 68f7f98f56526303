// listEvents: an organisation's tracked events, newest first, by visitor and name.
import type { Deps } from '../deps.ts';
import { cursorNumber, cursorTime, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { HandlerMap, Principal } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.ts';
import { listEvents } from './events.repository.ts';

export function eventReadHandlers(deps: Deps): HandlerMap<'listEvents'> {
  return {
    listEvents: async (c) => {
      const { org_id } = c.request.params;
      const q = c.request.query ?? {};
      await requireOrganisation(deps.db, c.security.bearerAuth as Principal, org_id);
      const limit = pageLimit(q.limit);
      const filters = { org_id, core_id: q.core_id ?? null, name: q.name ?? null };
      const pos = decodeCursor(q.cursor, filters);
      const after: [string, number] | undefined = pos ? [cursorTime(pos, 'at'), cursorNumber(pos, 'id')] : undefined;
      const rows = await listEvents(deps.db, { orgId: org_id, coreId: q.core_id, name: q.name, after, limit });
      const result = toPage(rows, limit, (e) => ({ at: e.received_at.toISOString(), id: e.id }), filters);
      return {
        status: 200,
        body: {
          items: result.rows.map((e) => ({
            id: String(e.id),
            name: e.name as never,
            core_id: e.core_id,
            roaming_id: e.roaming_id,
            corex_id: e.corex_id,
            received_at: e.received_at.toISOString(),
            body: e.body,
          })),
          next_cursor: result.next_cursor,
        },
      };
    },
  };
}
