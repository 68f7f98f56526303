// The plain batch's one statement (src/tracking/plain-batch.service.ts says when a
// batch is plain and why one statement): the visitors upsert (identity's
// own, visitorsUpsert) and the events insert as data-modifying CTEs, outside
// any transaction — a single statement is atomic. When its events record
// something (a product view, a cart: src/identity/recorded.rules.ts),
// identity's profile writes travel as CTEs of the same statement
// (profileWrites, src/identity/profile-upsert.repository.ts), fed with the
// persons the visitors upsert returns. It answers with the visitors the
// upsert wrote (src/identity/fresh-visitors.service.ts remembers them). A
// measured hot path: the text stays as it is (prepared once per connection;
// one text per shape).
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import { profileWrites } from '../identity/profile-upsert.repository.ts';
import type { Recording } from '../identity/recorded.rules.ts';
import { visitorsUpsert, type VisitorTouch } from '../identity/visitors-upsert.repository.ts';
import { eventsInsert, type NewEvent } from './events.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

/** A visitor row the statement's upsert inserted or rewrote. */
export interface WrittenVisitor {
  org_id: OrgId;
  core_id: string;
}

/**
 * Touches the visitors, inserts the events and writes what they record, in
 * one statement; returns the visitors its upsert inserted or rewrote (the
 * others it left as they were).
 */
export async function insertPlainBatch(
  db: Database,
  touches: VisitorTouch[],
  events: readonly NewEvent[],
  recording: Recording = { marks: [], products: [] },
): Promise<WrittenVisitor[]> {
  const profile = profileWrites(touches, recording.marks, recording.products);
  const { rows } = await sql<WrittenVisitor>`${sql.raw(PREPARE)}
    WITH touched AS (${visitorsUpsert(touches)}
    RETURNING v.org_id, v.core_id, v.person_id),
    stored AS (${eventsInsert(events)})${profile ? sql`,\n    ${profile}` : sql``}
    SELECT org_id, core_id FROM touched
  `.execute(db);
  return rows;
}
