// The plain batch's one statement (src/tracking/plain-batch.service.ts says when a
// batch is plain and why one statement): the visitors upsert (identity's
// own, visitorsUpsert) and the events insert as data-modifying CTEs, outside
// any transaction — a single statement is atomic. A measured hot path: the
// text stays as it is (prepared once per connection).
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import { visitorsUpsert, type VisitorTouch } from '../identity/visitors-upsert.repository.ts';
import { eventsInsert, type NewEvent } from './events.repository.ts';

/** Touches the visitors and inserts the events, in one statement. */
export async function insertPlainBatch(db: Database, touches: VisitorTouch[], events: readonly NewEvent[]): Promise<void> {
  await sql`${sql.raw(PREPARE)}
    WITH touched AS (${visitorsUpsert(touches)}),
    stored AS (${eventsInsert(events)})
    SELECT 1
  `.execute(db);
}
