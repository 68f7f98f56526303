// Bots kept out (issue 23, point 5; README "Bots"): known crawlers and
// headless browsers are answered as usual but store nothing
// (src/tracking/bots.rules.ts).
//
// - organisations.filter_bots: keep them out (default true, so every
//   organisation, old and new, filters from the start).
// - bot_requests: how many tracking requests of an organisation were kept out,
//   per UTC hour and reason, for getOrganisationStats. Written in the
//   background, one upsert per organisation per flush (src/tracking/
//   bot-counts.repository.ts), never by the request itself; rows older than
//   the stats' week are deleted by the same statement. A tenant table:
//   distributed by org_id under Citus (src/db/distribution.ts).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE organisations ADD COLUMN filter_bots boolean NOT NULL DEFAULT true;

    CREATE TABLE bot_requests (
      org_id bigint NOT NULL,
      hour timestamptz NOT NULL,
      reason text NOT NULL CHECK (reason IN ('user_agent', 'webdriver')),
      requests bigint NOT NULL CHECK (requests >= 0),
      PRIMARY KEY (org_id, hour, reason)
    );
  `.execute(db);
}
