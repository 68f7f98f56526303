// The plain batch: events only, none carrying a corex_id, none of a kind
// identity records (EVENTS_RECORDED), for organisations that export no
// events. Such a batch needs nothing from PostgreSQL but its visitors touched
// and its events inserted: no person is read, nothing is stitched, no delivery
// is caused. It is written as ONE statement (data-modifying CTEs) outside any
// transaction — a single statement is atomic, and one round trip replaces
// BEGIN, the visitors upsert, the read-back of returning visitors, the events
// insert and COMMIT.
//
// Returning visitors: a visitor whose stored row is fresh and unchanged (the
// same rule as upsertVisitors: worthAWrite) is left out of the upsert, so it
// is neither rewritten nor locked (a tuple lock writes the heap page and WAL).
// The lock exists in the transaction path so that the person read is current
// under a concurrent merge; this path reads no person, so it needs none. A
// visitor skipped on a stale snapshot only misses a touch a concurrent batch
// is making anyway; visitors are never deleted, so its events never lack one.
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import { hasCitus } from '../db/distribution.ts';
import { visitorTouchJson, worthAWrite } from '../identity/identity.repository.ts';
import { EVENTS_RECORDED, visitorTouches } from '../identity/stitching.service.ts';
import { eventsInsert } from './events.repository.ts';
import type { EventItem, IngestItem } from './ingest.types.ts';

/** Whether the batch is plain (see above); `exportsEvents` answers for each organisation of the batch. */
export function isPlainBatch(items: readonly IngestItem[], exportsEvents: (orgId: number) => boolean): items is EventItem[] {
  return items.every((it) => it.kind === 'event' && it.corexId === null && !EVENTS_RECORDED.has(it.name) && !exportsEvents(it.orgId));
}

/**
 * Whether the database is a Citus cluster, asked once per database handle.
 * Citus cannot run the probe of stored visitors (a lateral join from the
 * batch's rows to a distributed table): there the upsert's own ON CONFLICT
 * condition decides alone, which locks the fresh visitors it leaves alone.
 */
const onCitus = new WeakMap<Database, Promise<boolean>>();
function isCitus(db: Database): Promise<boolean> {
  let known = onCitus.get(db);
  if (!known) {
    known = hasCitus(db);
    onCitus.set(db, known);
    // asked again next time if the question itself failed
    known.catch(() => onCitus.delete(db));
  }
  return known;
}

/** Writes a plain batch: its visitors and its events, in one statement. */
export async function storePlainBatch(db: Database, items: readonly EventItem[]): Promise<void> {
  if (items.length === 0) return;
  const probe = !(await isCitus(db));
  const visitors = JSON.stringify(visitorTouches(items).map(visitorTouchJson));
  // the batch's organisations named as a parameter: under Citus the read of stored visitors goes to their shards only
  const orgIds = [...new Set(items.map((r) => r.orgId))];
  await sql`${sql.raw(PREPARE)}
    WITH incoming AS (
      SELECT * FROM jsonb_to_recordset(${visitors}::jsonb) AS x(
        org_id bigint, core_id text, roaming_id text, corex_id text,
        first_seen timestamptz, last_seen timestamptz, user_agent text, location jsonb, name text)
    ),
    touched AS (
      INSERT INTO visitors AS v (org_id, core_id, roaming_id, corex_id, first_seen, last_seen, user_agent, location)
      SELECT i.org_id, i.core_id, i.roaming_id, i.corex_id, i.first_seen, i.last_seen, i.user_agent, i.location
      FROM incoming i
      ${probe ? probeStored(orgIds) : sql``}
      ON CONFLICT (org_id, core_id) DO UPDATE SET
        roaming_id = EXCLUDED.roaming_id,
        last_seen = GREATEST(v.last_seen, EXCLUDED.last_seen),
        user_agent = COALESCE(EXCLUDED.user_agent, v.user_agent),
        location = COALESCE(EXCLUDED.location, v.location)
      WHERE ${sql.raw(worthAWrite('v', 'EXCLUDED'))}
    ),
    stored AS (${eventsInsert(items)})
    SELECT 1
  `.execute(db);
}

/** The fresh, unchanged stored visitors left out of the upsert: a per-row index probe (LIMIT keeps it one; a NOT EXISTS anti-join may seq-scan visitors). */
function probeStored(orgIds: number[]) {
  return sql`
      LEFT JOIN LATERAL (
        SELECT NOT (${sql.raw(worthAWrite('s', 'i'))}) AS fresh
        FROM visitors s
        WHERE s.org_id = ANY(${orgIds}::bigint[]) AND s.org_id = i.org_id AND s.core_id = i.core_id
        LIMIT 1
      ) s ON true
      WHERE s.fresh IS NOT TRUE`;
}
