// The plain batch's one statement (src/tracking/plain-batch.service.ts says when a
// batch is plain and why one statement): the visitors upsert (identity's
// own, visitorsUpsert) and the events insert as data-modifying CTEs, outside
// any transaction — a single statement is atomic. When its events record
// something (a product view, a cart: src/identity/recorded.rules.ts),
// identity's profile writes travel as CTEs of the same statement
// (profileWrites, src/identity/profile-upsert.repository.ts), fed with the
// persons the visitors upsert returns. A measured hot path: the text stays
// as it is (prepared once per connection; one text per shape).
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import { profileWrites } from '../identity/profile-upsert.repository.ts';
import type { Recording } from '../identity/recorded.rules.ts';
import { visitorsUpsert, type VisitorTouch } from '../identity/visitors-upsert.repository.ts';
import { eventsInsert, type NewEvent } from './events.repository.ts';

/** Touches the visitors, inserts the events and writes what they record, in one statement. */
export async function insertPlainBatch(
  db: Database,
  touches: VisitorTouch[],
  events: readonly NewEvent[],
  recording: Recording = { marks: [], products: [] },
): Promise<void> {
  const profile = profileWrites(touches, recording.marks, recording.products);
  const returning = sql.raw(recording.marks.length > 0 ? 'RETURNING v.org_id, v.core_id, v.person_id' : '');
  await sql`${sql.raw(PREPARE)}
    WITH touched AS (${visitorsUpsert(touches)}
    ${returning}),
    stored AS (${eventsInsert(events)})${profile ? sql`,\n    ${profile}` : sql``}
    SELECT 1
  `.execute(db);
}
