// organisations.export_unverified (issue 22, point 2): false keeps event
// exports of activity not backed by a verified contact link out of the
// organisation's webhooks (src/webhooks/fan-out.service.ts). The default,
// true, keeps every organisation's exports as they were; each export now says
// whether it is `verified`.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE organisations ADD COLUMN export_unverified boolean NOT NULL DEFAULT true`.execute(db);
}
