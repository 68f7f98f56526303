// The plain batch: events only, none carrying a corex_id, for organisations
// that export no events (an event under Global Privacy Control counts
// whatever its organisation: nothing exports it). Such a batch needs no
// stitching (without a corex_id or an identify no two persons become one),
// no contact and no delivery: only its visitors touched, its events inserted
// and, for the kinds identity records (productview, updatecart, checkout,
// buy: src/identity/recorded.rules.ts), its persons' recent views and cart
// and the product catalogue. It is written as ONE statement
// (data-modifying CTEs: plain-batch.repository.ts) outside any transaction —
// a single statement is atomic, so the event is committed before its 202,
// and a failed batch is retried item by item as before. One round trip
// replaces BEGIN, the visitors upsert with the events, the read-back of
// returning visitors, the product and profile upserts and COMMIT.
//
// The visitors upsert is upsertVisitors' own (visitorsUpsert). Returning
// visitors: its ON CONFLICT rewrites a stored visitor only when something
// changed or last_seen is stale; a fresh, unchanged one is left as it is,
// unless the batch records a view or a cart for it: then its person is
// needed under its row lock, and the statement rewrites it unchanged to
// have it returned or, for one this process knows fresh on plain
// PostgreSQL, reads it with a share lock (src/identity/profile-upsert.repository.ts
// says why). An earlier form first probed the stored
// visitors (a lateral index lookup) to leave fresh ones out of the upsert, and
// so unlocked: its plan depended on the planner's view of the visitors table,
// and while the table grew the probe became a sequential scan per row (the
// quiet bench of 16:28 UTC: 923 µs of PostgreSQL CPU per new-visitor event;
// unprepared, 5,241 µs per returning one); Citus refused it as well. What
// the process itself knows instead: the visitors it wrote lately
// (src/identity/fresh-visitors.service.ts); a touch the upsert would leave
// unwritten against what it wrote is left out of the statement.
import type { Database } from '../db/database.ts';
import type { FreshVisitors } from '../identity/fresh-visitors.service.ts';
import { holdsByRead } from '../identity/profile-upsert.repository.ts';
import { profileMarks } from '../identity/recorded.rules.ts';
import { visitorTouches } from '../identity/stitching.service.ts';
import type { EventItem, IngestItem } from './ingest.types.ts';
import { insertPlainBatch } from './plain-batch.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

/**
 * Whether the batch is plain (see above); `exportsEvents` answers for each
 * organisation of the batch. An event under Global Privacy Control (`gpc`,
 * its corex_id already dropped: src/privacy/ingest-privacy.service.ts) is
 * never recorded by identity nor exported, whatever its kind.
 */
export function isPlainBatch(items: readonly IngestItem[], exportsEvents: (orgId: OrgId) => boolean): items is EventItem[] {
  return items.every((it) => it.kind === 'event' && it.corexId === null && (it.gpc === true || !exportsEvents(it.orgId)));
}

/**
 * Writes a plain batch: its visitors, its events and what identity records
 * of them, in one statement. With `fresh` (the process's FreshVisitors), a
 * visitor the upsert would leave unwritten is left out of it; when the batch
 * records a view or a cart for it, its person is needed under its row lock
 * (above): read with a share lock on plain PostgreSQL, sent to the upsert
 * under Citus.
 */
export async function storePlainBatch(db: Database, items: readonly EventItem[], fresh?: FreshVisitors): Promise<void> {
  if (items.length === 0) return;
  const recording = profileMarks(items);
  const all = visitorTouches(items);
  const { send, held, markedSent } = fresh
    ? fresh.toSend(all, recording.marks, recording.marks.length === 0 || !(await holdsByRead(db)))
    : { send: all, held: [], markedSent: recording.marks.length > 0 };
  const written = await insertPlainBatch(db, send, items, recording, { held, hold: markedSent });
  fresh?.wrote(send, written);
}
