// Room on each page of `deliveries` for its rows' next versions (issue 24).
// A delivery is written three times: inserted, then updated by its claim (the
// lease: next_attempt_at, attempts_count) and by its outcome (status, ...).
// Both updates change indexed columns, so neither is HOT; but where the new
// version fits on the old one's page, PostgreSQL logs the update compressed
// against the old version and needs no lock record for it. Packed full
// (fillfactor 100), nearly every update went to another page: the bench's
// dispatch split its WAL by relation (BENCHMARKS.md, fifteenth stop) and
// found the deliveries heap writing 768 B per delivery, 2.65 lock records
// among them (the claim's FOR UPDATE, and heap_update's lock of the old
// version whenever the new one goes to another page). With half of each page
// left free, the claim's version lands beside the row and the outcome's
// replaces it after the claim's old version is pruned on access: 260 B and
// one lock record per delivery, the whole dispatch's WAL 1,550 -> 1,030 B per
// delivery. The table takes more pages for the rows it holds (indexes do not
// change), no more than packed rows and their moved versions took.
//
// Under Citus the setting is left alone on a table already distributed (as
// 2026-11-26T0800 does with its column option); on a fresh cluster the
// migrations run before `migrate --distribute`, and Citus makes every shard
// with the table's storage parameter (checked on a three-node Citus 13.2
// cluster: fillfactor=50 on all 32 shards).
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
        ALTER TABLE deliveries SET (fillfactor = 50);
      END IF;
    END
    $$;
  `.execute(db);
}
