// SQL of the deliveries' statistics keeper (delivery-statistics.worker.ts): how
// far the table has moved since PostgreSQL last analyzed it, and the ANALYZE.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

export interface DeliveriesMoved {
  /** rows inserted, updated or deleted since the last ANALYZE (n_mod_since_analyze) */
  changed: number;
  /** rows the last ANALYZE counted (0 when it never ran) */
  analyzed: number;
}

/**
 * What the statistics collector says of `deliveries` (on a Citus coordinator
 * that is the empty shell of a distributed table: it never moves, and the
 * shards' own servers analyze their shards).
 */
export async function deliveriesMoved(db: Database): Promise<DeliveriesMoved | undefined> {
  const { rows } = await sql<DeliveriesMoved>`
    SELECT s.n_mod_since_analyze::float8 AS changed, greatest(c.reltuples, 0)::float8 AS analyzed
    FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.relid = 'deliveries'::regclass
  `.execute(db);
  return rows[0];
}

/** One process at a time analyzes (the others skip a round). */
const LOCK_KEY = 7_361_902_115;

/** ANALYZE deliveries, unless another process is doing it; true when this one did. */
export async function analyzeDeliveries(db: Database): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const { rows } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}::bigint) AS ok`.execute(tx);
    if (rows[0]?.ok !== true) return false;
    await sql`ANALYZE deliveries`.execute(tx);
    return true;
  });
}
