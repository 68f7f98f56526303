// Maintenance of the events table: monthly partitions created ahead (so an
// insert never finds no partition) and, with EVENT_RETENTION_DAYS, partitions
// wholly older than the retention window dropped. Runs at start and hourly in
// every serve process; an advisory lock makes concurrent runs take turns.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Logger } from '../log.ts';

const LOCK = 0x7477_6576; // 'twev'
const MONTHS_AHEAD = 2;

export interface MaintenanceResult {
  created: number;
  dropped: string[];
}

export async function maintainEventPartitions(db: Database, retentionDays: number | undefined): Promise<MaintenanceResult> {
  return db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${LOCK})`.execute(tx);
    const made = await sql<{ made: number }>`SELECT trackway_ensure_event_partitions(${MONTHS_AHEAD}) AS made`.execute(tx);
    let dropped: string[] = [];
    if (retentionDays !== undefined) {
      const keepAfter = new Date(Date.now() - retentionDays * 86_400_000);
      const r = await sql<{ name: string }>`SELECT trackway_drop_event_partitions(${keepAfter}) AS name`.execute(tx);
      dropped = r.rows.map((row) => row.name);
    }
    return { created: made.rows[0]?.made ?? 0, dropped };
  });
}

/** Runs the maintenance now and every hour until stopped. */
export function startPartitionMaintenance(db: Database, retentionDays: number | undefined, log: Logger): () => void {
  const run = async () => {
    try {
      const r = await maintainEventPartitions(db, retentionDays);
      if (r.created || r.dropped.length) log.info({ created: r.created, dropped: r.dropped }, 'event partitions maintained');
    } catch (err) {
      log.warn({ err }, 'event partition maintenance failed; retrying within the hour');
    }
  };
  void run();
  const timer = setInterval(run, 3_600_000);
  timer.unref();
  return () => clearInterval(timer);
}
