// Webhook deliveries: a manual retry starts a fresh retry schedule while the
// attempt numbers (and `attempts_count`) keep counting, so the schedule
// position is `attempts_count - schedule_start`.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries ADD COLUMN schedule_start integer NOT NULL DEFAULT 0;
  `.execute(db);
}
