// Reading events: an organisation's tracked events, newest first, by visitor
// and name, for a caller the organisation is assigned to.
import type { Deps } from '../deps.ts';
import { cursorNumber, cursorTime, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.service.ts';
import { listEvents } from './events.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

export async function eventPage(
  deps: Pick<Deps, 'db'>,
  principal: Principal,
  orgId: OrgId,
  q: { limit?: number; cursor?: string; core_id?: string; name?: Schemas['EventName'] },
): Promise<Schemas['TrackedEventList']> {
  await requireOrganisation(deps.db, principal, orgId);
  const limit = pageLimit(q.limit);
  const filters = { org_id: orgId, core_id: q.core_id ?? null, name: q.name ?? null };
  const pos = decodeCursor(q.cursor, filters);
  const after: [string, number] | undefined = pos ? [cursorTime(pos, 'at'), cursorNumber(pos, 'id')] : undefined;
  const rows = await listEvents(deps.db, { orgId, coreId: q.core_id, name: q.name, after, limit });
  const result = toPage(rows, limit, (e) => ({ at: e.received_at.toISOString(), id: e.id }), filters);
  return {
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
  };
}
