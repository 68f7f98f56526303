// The plain batch: events only, none carrying a corex_id, none of a kind
// identity records (EVENTS_RECORDED), for organisations that export no
// events — or events under Global Privacy Control, which identity never
// records and nothing exports, whatever their kind. Such a batch needs nothing from PostgreSQL but its visitors touched
// and its events inserted: no person is read, nothing is stitched, no delivery
// is caused. It is written as ONE statement (data-modifying CTEs:
// plain-batch.repository.ts) outside any transaction — a single statement is atomic, and one round trip replaces
// BEGIN, the visitors upsert, the read-back of returning visitors, the events
// insert and COMMIT.
//
// The visitors upsert is upsertVisitors' own (visitorsUpsert). Returning
// visitors: its ON CONFLICT rewrites a stored visitor only when something
// changed or last_seen is stale; a fresh, unchanged one is left as it is. An earlier form first probed the stored
// visitors (a lateral index lookup) to leave fresh ones out of the upsert, and
// so unlocked: its plan depended on the planner's view of the visitors table,
// and while the table grew the probe became a sequential scan per row (the
// quiet bench of 16:28 UTC: 923 µs of PostgreSQL CPU per new-visitor event;
// unprepared, 5,241 µs per returning one); Citus refused it as well.
import type { Database } from '../db/database.ts';
import { EVENTS_RECORDED, visitorTouches } from '../identity/stitching.service.ts';
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
  return items.every(
    (it) => it.kind === 'event' && it.corexId === null && (it.gpc === true || (!EVENTS_RECORDED.has(it.name) && !exportsEvents(it.orgId))),
  );
}

/** Writes a plain batch: its visitors and its events, in one statement. */
export async function storePlainBatch(db: Database, items: readonly EventItem[]): Promise<void> {
  if (items.length === 0) return;
  await insertPlainBatch(db, visitorTouches(items), items);
}
