// login_failures: fixed-window counters of failed logins, one row per key
// (`email:<normalised email>`, `ip:<address>`). Kysely only.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

export interface Counter {
  key: string;
  failures: number;
  /** whole seconds until the counter's window ends (at least 1) */
  retryAfter: number;
}

/**
 * Counts one attempt against each key and returns the new counts. A window
 * starts with the first counted attempt and lasts `windowMs`; an attempt
 * after it starts a new window. Atomic per key, so concurrent attempts are
 * all counted.
 */
export async function countAttempt(db: Database, keys: string[], windowMs: number): Promise<Counter[]> {
  if (keys.length === 0) return [];
  const window = sql`make_interval(secs => ${windowMs / 1000})`;
  const { rows } = await sql<{ key: string; failures: number; retry_after: number }>`
    INSERT INTO login_failures AS f (key, window_start, failures)
    SELECT k, now(), 1 FROM unnest(${keys}::text[]) AS k
    ON CONFLICT (key) DO UPDATE SET
      failures = CASE WHEN f.window_start + ${window} <= now() THEN 1 ELSE f.failures + 1 END,
      window_start = CASE WHEN f.window_start + ${window} <= now() THEN now() ELSE f.window_start END
    RETURNING key, failures,
      greatest(1, ceil(extract(epoch FROM (window_start + ${window} - now()))))::integer AS retry_after
  `.execute(db);
  return rows.map((r) => ({ key: r.key, failures: r.failures, retryAfter: r.retry_after }));
}

/** A successful login: its attempt is not counted, and the email's counter starts over. */
export async function forgiveAttempt(db: Database, resetKey: string, decrementKeys: string[]): Promise<void> {
  await db.deleteFrom('login_failures').where('key', '=', resetKey).execute();
  if (decrementKeys.length === 0) return;
  await db
    .updateTable('login_failures')
    .set({ failures: sql<number>`greatest(failures - 1, 0)` })
    .where('key', 'in', decrementKeys)
    .execute();
}

/** Housekeeping: counters whose window ended long ago. */
export async function deleteExpired(db: Database, windowMs: number): Promise<void> {
  await db
    .deleteFrom('login_failures')
    .where('window_start', '<', sql<Date>`now() - make_interval(secs => ${windowMs / 1000})`)
    .execute();
}
