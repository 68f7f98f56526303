// The plain batch's one statement (src/tracking/plain-batch.service.ts says when a
// batch is plain and why one statement): the visitors upsert (identity's
// own, visitorsUpsert) and the events insert as data-modifying CTEs, outside
// any transaction — a single statement is atomic. When its events record
// something (a product view, a cart: src/identity/recorded.rules.ts),
// identity's profile writes travel as CTEs of the same statement
// (profileWrites, src/identity/profile-upsert.repository.ts), fed with the
// persons the visitors upsert returns (it holds the visitors it would leave
// unwritten, to return them too: visitorsUpsert's `hold`) and, on plain
// PostgreSQL, those of the marked visitors the process knows fresh, read
// with a share lock instead of sent (`held`). It answers with
// the visitors the upsert returned (src/identity/fresh-visitors.service.ts
// remembers them; a held one comes with its older last_seen). A
// measured hot path: the text stays as it is (prepared once per connection;
// one text per shape).
import { sql } from 'kysely';
import { type Database, PLAIN_POSTGRES, PREPARE } from '../db/database.ts';
import { profileWrites } from '../identity/profile-upsert.repository.ts';
import type { Recording } from '../identity/recorded.rules.ts';
import { visitorsUpsert, type VisitorTouch } from '../identity/visitors-upsert.repository.ts';
import { eventsInsert, type NewEvent } from './events.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

/** A visitor row the statement's upsert returned: inserted or rewritten, or (with a marked visitor sent) held. */
export interface WrittenVisitor {
  org_id: OrgId;
  core_id: string;
  /** with a marked visitor sent only: its last_seen as stored (older than the touch's: held, not written) */
  last_seen?: Date;
}

/**
 * Touches the visitors, inserts the events and writes what they record, in
 * one statement; returns the visitors its upsert inserted or rewrote (the
 * others it left as they were) or, with `hold` (a marked visitor, a view or
 * a cart, is among its touches), every visitor it touched with its
 * last_seen as stored. `held`: marked visitors left out of the upsert, whose
 * persons the statement reads under a share lock (plain PostgreSQL only:
 * profile-upsert.repository.ts). Every marked visitor is in one of the two.
 */
export async function insertPlainBatch(
  db: Database,
  touches: VisitorTouch[],
  events: readonly NewEvent[],
  recording: Recording,
  { held, hold }: { held: readonly VisitorTouch[]; hold: boolean },
): Promise<WrittenVisitor[]> {
  const profile = profileWrites(recording.marks, recording.products, held);
  const { rows } = await sql<WrittenVisitor>`${sql.raw(held.length > 0 ? PREPARE + PLAIN_POSTGRES : PREPARE)}
    WITH touched AS (${visitorsUpsert(touches, hold ? 'hold' : 'skip')}
    RETURNING v.org_id, v.core_id, v.person_id${sql.raw(hold ? ', v.last_seen' : '')}),
    stored AS (${eventsInsert(events)})${profile ? sql`,\n    ${profile}` : sql``}
    SELECT org_id, core_id${sql.raw(hold ? ', last_seen' : '')} FROM touched
  `.execute(db);
  return rows;
}
