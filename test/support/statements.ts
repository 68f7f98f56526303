// The statements pg sends, for tests that count what a path sends: a hook on
// pg.Client.prototype.query. Set it before the server under test connects
// (the pool's clients bind query when they connect), restore it after.
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/db/schema.ts';
import { onCitusCluster } from './citus.ts';

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
  // on a Citus cluster the wait is on a worker, in the shard's statement: citus_lock_waits names the statement the client sent
  for (let i = 0; ; i++) {
    const waiting = onCitusCluster()
      ? await sql<{ n: string }>`SELECT count(*) AS n FROM citus_lock_waits WHERE blocked_statement LIKE ${`%${fragment}%`}`.execute(db)
      : await sql<{ n: string }>`
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
 *
 * On a Citus cluster (TEST_CITUS_WORKERS: test/support/citus.ts) the
 * coordinator makes no generic plan of a distributed statement (it plans
 * each execution for its values and refuses a forced generic plan), and the
 * shard's plan is the worker's. There the statement must go to ONE shard
 * (a router query; anything else fails here), and the plan returned is the
 * one the worker makes for the shard query Citus sends it, with that
 * worker's buffers, explained on the worker in a transaction rolled back
 * after. Index names come back without their shard's suffix.
 */
export async function explainGeneric(
  pool: pg.Pool,
  statement: SentStatement,
  /** force_custom_plan: the plan made for these values from the statistics as they are */
  mode: 'force_generic_plan' | 'force_custom_plan' = 'force_generic_plan',
): Promise<PlanNode> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    try {
      const citus = onCitusCluster();
      if (!citus) await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
      await client.query(`PREPARE plan_check AS ${statement.text}`);
      // EXECUTE takes no bind parameters: each value in pg's text form, as an untyped literal the statement types
      const literal = (v: unknown): string => {
        const text = prepareValue(v) as string | null;
        return text === null ? 'NULL' : client.escapeLiteral(String(text));
      };
      const literals = statement.values.map(literal);
      const execute = `EXECUTE plan_check(${literals.join(', ')})`;
      if (citus) return await explainOnShard(pool, client, execute, literals);
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${execute}`);
      return rows[0]!['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('ROLLBACK');
      // only its own: pg's client keeps the pool connection's other prepared statements by name
      await client.query('DEALLOCATE plan_check').catch(() => {});
    }
  } finally {
    client.release();
  }
}

/** The Citus side of explainGeneric: the one task's shard query, explained on its worker. */
async function explainOnShard(pool: pg.Pool, coordinator: pg.PoolClient, execute: string, literals: string[]): Promise<PlanNode> {
  const { rows } = await coordinator.query<{ 'QUERY PLAN': string }>(`EXPLAIN (VERBOSE, COSTS OFF) ${execute}`);
  const text = rows.map((r) => r['QUERY PLAN']).join('\n');
  const tasks = /Task Count: (\d+)/.exec(text);
  expect(tasks, `a distributed plan:\n${text}`).to.not.equal(null);
  expect(Number(tasks![1]), `the statement goes to one shard:\n${text}`).to.equal(1);
  // a router query may keep the statement's parameters ($n) and send the values beside it: here they go in as literals (outside quoted text)
  const query = /^\s*Query: (.*)$/m
    .exec(text)?.[1]
    ?.split("'")
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/\$(\d+)\b/g, (_, n: string) => literals[Number(n) - 1]!)))
    .join("'");
  const node = /Node: host=(\S+) port=(\d+) dbname=(\S+)/.exec(text);
  expect(query && node, `the task's query and node:\n${text}`).to.be.ok;
  const coordinatorUrl = new URL((pool.options as { connectionString: string }).connectionString);
  const worker = new pg.Client({
    host: node![1],
    port: Number(node![2]),
    database: node![3],
    user: decodeURIComponent(coordinatorUrl.username),
    password: coordinatorUrl.password ? decodeURIComponent(coordinatorUrl.password) : undefined,
  });
  await worker.connect();
  try {
    await worker.query('BEGIN');
    try {
      const plan = await worker.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${query!}`);
      const unsuffixed = (n: PlanNode): PlanNode => ({
        ...n,
        ...(n['Index Name'] ? { 'Index Name': n['Index Name'].replace(/_\d+$/, '') } : {}),
        ...(n.Plans ? { Plans: n.Plans.map(unsuffixed) } : {}),
      });
      return unsuffixed(plan.rows[0]!['QUERY PLAN'][0].Plan);
    } finally {
      await worker.query('ROLLBACK');
    }
  } finally {
    await worker.end();
  }
}
