// Maintenance of the events table: monthly partitions created ahead (so an
// insert never finds no partition) and, with EVENT_RETENTION_DAYS, partitions
// wholly older than the retention window dropped. Runs at start and hourly in
// every serve process; an advisory lock makes concurrent runs take turns.
import type { Database } from '../db/database.ts';
import type { Logger } from '../log.ts';
import { dropEventPartitions, ensureEventPartitions, lockPartitionMaintenance } from './partitions.repository.ts';

const MONTHS_AHEAD = 2;

export interface MaintenanceResult {
  created: number;
  dropped: string[];
}

export async function maintainEventPartitions(db: Database, retentionDays: number | undefined): Promise<MaintenanceResult> {
  return db.transaction().execute(async (tx) => {
    await lockPartitionMaintenance(tx);
    const created = await ensureEventPartitions(tx, MONTHS_AHEAD);
    let dropped: string[] = [];
    if (retentionDays !== undefined) {
      const keepAfter = new Date(Date.now() - retentionDays * 86_400_000);
      dropped = await dropEventPartitions(tx, keepAfter);
    }
    return { created, dropped };
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
