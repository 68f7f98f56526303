// The events table's partitions: the SQL behind partitions.worker.ts (the functions
// themselves are in the migrations).
import { sql } from 'kysely';
import type { Tx } from '../db/tenancy.ts';

const LOCK = 0x7477_6576; // 'twev'

/** One maintenance run at a time: concurrent ones wait for this transaction to end. */
export async function lockPartitionMaintenance(tx: Tx): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${LOCK})`.execute(tx);
}

/** Creates the monthly partitions missing up to `monthsAhead` months from now; how many it made. */
export async function ensureEventPartitions(tx: Tx, monthsAhead: number): Promise<number> {
  const made = await sql<{ made: number }>`SELECT trackway_ensure_event_partitions(${monthsAhead}) AS made`.execute(tx);
  return made.rows[0]?.made ?? 0;
}

/** Drops the partitions wholly older than `keepAfter`; their names. */
export async function dropEventPartitions(tx: Tx, keepAfter: Date): Promise<string[]> {
  const r = await sql<{ name: string }>`SELECT trackway_drop_event_partitions(${keepAfter}) AS name`.execute(tx);
  return r.rows.map((row) => row.name);
}
