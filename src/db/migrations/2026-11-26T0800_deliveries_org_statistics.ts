// How the planner sizes one organisation's deliveries (issue 24). The
// dispatcher's claim and outcome statements are prepared, and a generic plan
// estimates `org_id = $1` as the average organisation: the table's rows over
// the distinct organisations. Deliveries are skewed (a few organisations send
// most of them), so with many small organisations the estimate was 2 rows for
// any one, and the update of a claim's 5 deliveries scanned every delivery of
// the organisation through an index that begins with org_id (4,164 rows, 7.3 ms
// in the bench's mixed load; an organisation with a million deliveries would
// scan a million per claim) instead of looking each up by its key
// (docs/profiles/visitors-read-back.md, test/webhooks/dispatch-plans.test.ts).
//
// n_distinct = 1 tells the planner to size any organisation as the whole
// table: it then prefers key lookups for a handful of rows, and an
// organisation-wide read (which every API list bounds with an index order and
// a limit) is planned as the large read it may be. ANALYZE keeps the setting.
//
// Under Citus the setting is left alone: the coordinator does not plan shard
// queries, and column options of a distributed table are not propagated.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    DO $$
    DECLARE
      distributed boolean := false;
    BEGIN
      IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = ''deliveries''::regclass)' INTO distributed;
      END IF;
      IF NOT distributed THEN
        ALTER TABLE deliveries ALTER COLUMN org_id SET (n_distinct = 1);
      END IF;
    END
    $$;
  `.execute(db);
}
