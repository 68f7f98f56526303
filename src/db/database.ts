// The Kysely instance over a pg pool, and the migrator.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileMigrationProvider, Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DB } from './schema.ts';

// bigint columns (ids, counts) are read as numbers: every id we hand out stays
// far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Database = Kysely<DB>;

export interface DbHandle {
  db: Database;
  pool: pg.Pool;
  close(): Promise<void>;
}

export interface DbOptions {
  max?: number;
  onError?: (err: Error) => void;
  applicationName?: string;
}

export function createDb(connectionString: string, opts: DbOptions = {}): DbHandle {
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 20,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
    application_name: opts.applicationName ?? 'trackway',
  });
  // An idle client whose server went away (a restart, an admin shutdown)
  // emits 'error' on the pool; without a listener that would crash us.
  pool.on('error', (err) => opts.onError?.(err));
  // A checked-out client has no listener of pg-pool's: a 57P01 (fast shutdown,
  // pg_terminate_backend) arriving between two statements of a transaction
  // would be an uncaught 'error' event and end the process. The statement in
  // flight fails on its own (answered 503); the pool drops the dead client.
  pool.on('connect', (client) => client.on('error', (err) => opts.onError?.(err)));
  pool.on('connect', preparedStatements);
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    db,
    pool,
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

/**
 * Marks a statement that reads or writes tenant tables across organisations
 * on purpose (a multi-shard statement under Citus: the dispatcher's search for
 * organisations with due deliveries, counters, maintenance). The hot-path
 * check (test/foundation/org-scoped-statements.test.ts) accepts only these
 * without an organisation filter. Put it first, after PREPARE.
 */
export const ALL_ORGANISATIONS = '/*all-orgs*/ ';

/**
 * Marks a statement sent only where the tenant tables are not distributed
 * (plain PostgreSQL), beside a Citus counterpart that names its organisations
 * (e.g. the visitors read-back, src/identity/identity.repository.ts). The hot-path
 * check accepts it without an organisation filter on plain PostgreSQL and
 * fails if it is sent on a Citus cluster. Put it first, after PREPARE.
 */
export const PLAIN_POSTGRES = '/*plain-pg*/ ';

/** Marks a hot statement of fixed text: it is prepared once per connection (see preparedStatements). */
export const PREPARE = '/*prepare*/ ';

/**
 * Statements that start with PREPARE are sent as named prepared statements:
 * PostgreSQL parses them once per connection and, after a few runs, reuses a
 * generic plan, which saves most of the planning time of the ingest path's
 * batch statements (their text never changes: rows travel as one jsonb
 * parameter). Everything else goes through unchanged.
 */
function preparedStatements(client: pg.PoolClient): void {
  const names = new Map<string, string>();
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (text: unknown, ...rest: unknown[]) => {
    if (typeof text === 'string' && text.startsWith(PREPARE)) {
      let name = names.get(text);
      if (!name) names.set(text, (name = 'tw_' + createHash('sha1').update(text).digest('hex').slice(0, 16)));
      const [values, callback] = rest;
      return query({ name, text, values }, callback);
    }
    return query(text, ...rest);
  };
}

const MIGRATIONS = fileURLToPath(new URL('./migrations', import.meta.url));

/** Runs pending migrations. Kysely serialises concurrent runs with an advisory lock. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function migrate(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: MIGRATIONS }),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(JSON.stringify(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Resolves when the database answers a trivial query (readiness). */
export async function pingDatabase(db: Database): Promise<void> {
  await sql`SELECT 1`.execute(db);
}

/** The server's max_connections: what the cluster's pools are sized from. */
export async function maxConnections(db: Database): Promise<number> {
  const { rows } = await sql<{ max_connections: string }>`SHOW max_connections`.execute(db);
  return Number(rows[0]?.max_connections);
}
