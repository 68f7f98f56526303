// login_failures: fixed-window counters of failed logins, one row per key:
// `ip:<client address>` (every email from that address) and
// `email-ip:<normalised email>|<client address>` (one email from one
// address). Kysely only.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Executor } from '../db/tenancy.ts';

export interface Counter {
  key: string;
  failures: number;
  /** whole seconds until the counter's window ends (at least 1) */
  retryAfter: number;
}

export const addressKey = (address: string) => `ip:${address}`;
export const emailAddressKey = (email: string, address: string) => `email-ip:${email}|${address}`;

/**
 * Counts one attempt against each key (each with its own window length) and
 * returns the new counts. A window starts with the first counted attempt and
 * lasts `windowMs`; an attempt after it starts a new window. Concurrent
 * attempts are all counted, and in one transaction: an attempt holds its
 * first key's row until it has counted the others, so attempts on the same
 * first key (an email from an address) count every key in the same order.
 * Counted apart, a burst of guesses could see its third guess counted third
 * for the email but sixth for the address (five others counted there
 * meanwhile), and refused by the address's limit of 5 with only two guesses
 * made (test/platform/rate-limit.test.ts, a parallel burst).
 */
export async function countAttempt(db: Database, attempts: { key: string; windowMs: number }[]): Promise<Counter[]> {
  return db.transaction().execute((tx) => countEach(tx, attempts));
}

async function countEach(db: Executor, attempts: { key: string; windowMs: number }[]): Promise<Counter[]> {
  // One statement per key (two at most) with the time and the window's
  // cut-off as parameters: Citus allows only immutable functions and
  // operators, and no CTE, in ON CONFLICT DO UPDATE SET (login_failures is a
  // reference table there).
  const now = new Date();
  const out: Counter[] = [];
  for (const a of attempts) {
    const cutoff = new Date(now.getTime() - a.windowMs);
    const { rows } = await sql<{ key: string; failures: number; window_start: Date }>`
      INSERT INTO login_failures AS f (key, window_start, failures)
      VALUES (${a.key}, ${now}::timestamptz, 1)
      ON CONFLICT (key) DO UPDATE SET
        failures = CASE WHEN f.window_start <= ${cutoff}::timestamptz THEN 1 ELSE f.failures + 1 END,
        window_start = CASE WHEN f.window_start <= ${cutoff}::timestamptz THEN EXCLUDED.window_start ELSE f.window_start END
      RETURNING key, failures, window_start
    `.execute(db);
    const row = rows[0]!;
    const retryAfter = Math.max(1, Math.ceil((row.window_start.getTime() + a.windowMs - now.getTime()) / 1000));
    out.push({ key: row.key, failures: row.failures, retryAfter });
  }
  return out;
}

/** A successful login: its attempt is not counted, and the email's counter for that address starts over. */
export async function forgiveAttempt(db: Database, resetKey: string, decrementKeys: string[]): Promise<void> {
  await db.deleteFrom('login_failures').where('key', '=', resetKey).execute();
  if (decrementKeys.length === 0) return;
  await db
    .updateTable('login_failures')
    .set({ failures: sql<number>`greatest(failures - 1, 0)` })
    .where('key', 'in', decrementKeys)
    .execute();
}

/** A new password (set by the operator): the email's counters from every address start over. */
export async function forgetEmail(db: Database, email: string): Promise<void> {
  await db
    .deleteFrom('login_failures')
    .where(sql<boolean>`starts_with(key, ${emailAddressKey(email, '')})`)
    .execute();
}

/** Housekeeping: counters whose window ended long ago. */
export async function deleteExpired(db: Database, windowMs: number): Promise<void> {
  await db
    .deleteFrom('login_failures')
    .where('window_start', '<', sql<Date>`now() - make_interval(secs => ${windowMs / 1000})`)
    .execute();
}
