// The statements pg sends, for tests that count what a path sends: a hook on
// pg.Client.prototype.query. Set it before the server under test connects
// (the pool's clients bind query when they connect), restore it after.
import { expect } from 'chai';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/db/schema.ts';

/** Calls `listener` with the text of every statement any pg client sends, until the returned function restores pg. */
export function onStatements(listener: (text: string, client: pg.Client) => void): () => void {
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : first?.text;
    if (typeof text === 'string') listener(text, this);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  return () => {
    pg.Client.prototype.query = original;
  };
}

/** Resolves once some session waits on a lock in a statement whose text contains `fragment` (fails after ~2 s). */
export async function untilWaitingOnLock(db: Kysely<DB>, fragment: string, what: string): Promise<void> {
  for (let i = 0; ; i++) {
    const waiting = await sql<{ n: string }>`
      SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ${`%${fragment}%`}`.execute(db);
    if (Number(waiting.rows[0]!.n) > 0) return;
    expect(i, what).to.be.lessThan(200);
    await new Promise((r) => setTimeout(r, 10));
  }
}
