// The attempt that delivers is kept on its delivery (issue 24: "one write per
// attempt"). A delivery was written three times and its attempts once more:
// the insert, the claim, the outcome, and a row of delivery_attempts for
// each attempt (BENCHMARKS.md, fifteenth stop: 228 of its 1,030 B of WAL, a
// heap insert and a primary-key entry). Nearly every delivery is delivered
// by its first attempt, and a delivery is delivered at most once (it is
// final: a manual retry takes only failed and cancelled ones), by its last
// attempt. So the outcome that delivers writes that attempt into these
// columns of the row it updates anyway, and delivery_attempts keeps the
// attempts that did not deliver. The platform API lists a delivery's
// attempts as before: its rows of delivery_attempts, then this one
// (src/webhooks/deliveries.service.ts). Deliveries delivered before this
// migration keep their attempt in delivery_attempts and have these columns
// null.
//
// `deliveries` keeps half of each page free (2026-11-28T0100), so the wider
// version still lands beside the claim's. Under Citus, ADD COLUMN on a
// distributed table is propagated to its shards.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries
      ADD COLUMN delivered_attempt_at timestamptz,
      ADD COLUMN delivered_status_code int,
      ADD COLUMN delivered_duration_ms int,
      ADD COLUMN delivered_response_excerpt text
  `.execute(db);
}
