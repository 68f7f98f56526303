// The advisory lock that makes retention runs of several processes take turns
// (as the events partition maintenance does): session-level, held on one
// connection for the length of a run.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

const RETENTION_LOCK = 0x7477_7274; // 'twrt'

/**
 * Runs `fn` while holding the retention lock, on a connection kept for it;
 * undefined without running it when another process holds the lock.
 */
export async function whileHoldingRetentionLock<T>(db: Database, fn: () => Promise<T>): Promise<T | undefined> {
  return db.connection().execute(async (conn) => {
    const { rows } = await sql<{ got: boolean }>`SELECT pg_try_advisory_lock(${RETENTION_LOCK}) AS got`.execute(conn);
    if (!rows[0]?.got) return undefined;
    try {
      return await fn();
    } finally {
      await sql`SELECT pg_advisory_unlock(${RETENTION_LOCK})`.execute(conn);
    }
  });
}
