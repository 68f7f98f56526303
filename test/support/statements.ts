// The statements pg sends, for tests that count what a path sends: a hook on
// pg.Client.prototype.query. Set it before the server under test connects
// (the pool's clients bind query when they connect), restore it after.
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/db/schema.ts';

/** Calls `listener` with the text (and parameters) of every statement any pg client sends, until the returned function restores pg. */
export function onStatements(listener: (text: string, client: pg.Client, values: unknown[]) => void): () => void {
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string; values?: unknown[] };
    const text = typeof first === 'string' ? first : first?.text;
    const values = typeof first === 'string' ? args[1] : first?.values;
    if (typeof text === 'string') listener(text, this, Array.isArray(values) ? values : []);
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

/** A statement as pg sent it: its text and its parameters. */
export interface SentStatement {
  text: string;
  values: unknown[];
}

/**
 * Records the statements (with their parameters) every pg client sends while
 * a recording runs: `during(fn)` gives those `fn` sent. Like onStatements, set
 * it before the pool under test connects, and `restore()` after.
 */
export function statementRecorder(): { during(fn: () => Promise<unknown>): Promise<SentStatement[]>; restore(): void } {
  let sent: SentStatement[] | null = null;
  const restore = onStatements((text, _client, values) => sent?.push({ text, values }));
  return {
    async during(fn) {
      const recorded: SentStatement[] = (sent = []);
      try {
        await fn();
        return recorded;
      } finally {
        sent = null;
      }
    },
    restore,
  };
}

/** The part of an EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) plan node the plan checks read. */
export interface PlanNode {
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Buffers a plan touched (its top node counts its children's). */
export const buffersOf = (plan: PlanNode): number => (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);

/** pg's own conversion of a parameter to its text form (arrays, dates, buffers) */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

/**
 * EXPLAIN (ANALYZE, BUFFERS) of a statement as sent, under the generic plan
 * PostgreSQL would cache for it once prepared (plan_cache_mode =
 * force_generic_plan), in a transaction rolled back after: what a prepared
 * statement costs whatever the values of this run.
 */
export async function explainGeneric(pool: pg.Pool, statement: SentStatement): Promise<PlanNode> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    try {
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE plan_check AS ${statement.text}`);
      // EXECUTE takes no bind parameters: each value in pg's text form, as an untyped literal the statement types
      const literal = (v: unknown): string => {
        const text = prepareValue(v) as string | null;
        return text === null ? 'NULL' : client.escapeLiteral(String(text));
      };
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE plan_check(${statement.values.map(literal).join(', ')})`,
      );
      return rows[0]!['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('ROLLBACK');
      await client.query('DEALLOCATE ALL');
    }
  } finally {
    client.release();
  }
}
