// The PostgreSQL every server of `npm run bench` runs on.
// - embedded (default): the service starts a fresh embedded cluster in the
//   bench's temp data dir (fsync on, as in production); the limit server and
//   the bench use the same database through its postgres.json.
// - external (`--database-url URL` or DATABASE_URL): a scratch database is
//   created on that server for this run (the service migrates it) and dropped
//   at the end; no other database is touched.
// Either way the bench finds the cluster's postmaster (the parent of one of
// its own backends) to count PostgreSQL's CPU.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { postmasterOf } from './bench-proc.ts';

export const LIMIT_TABLE = 'bench_limit_events';

export interface DatabaseFacts {
  kind: 'embedded' | 'external';
  /** host:port/database, no credentials */
  where: string;
  version: string;
  settings: Record<string, string>;
  /** the postmaster's pid when the server runs on this machine */
  postmasterPid: number | undefined;
  /** what the PostgreSQL CPU column counts */
  cpuScope: string;
}

export interface ScratchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

export function redact(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, application_name: 'trackway-bench' });
  c.on('error', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database on the server at adminUrl, for this run only. */
export async function createScratchDatabase(adminUrl: string): Promise<ScratchDatabase> {
  const name = `trackway_bench_${Date.now().toString(36)}_${process.pid}`;
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${quoteIdent(name)}`));
  const u = new URL(adminUrl);
  u.pathname = '/' + name;
  let dropped = false;
  return {
    url: u.toString(),
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      // only the database this run created; FORCE ends sessions a killed server left behind (PostgreSQL 13+)
      await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`));
    },
  };
}

/** The URL of the embedded cluster's trackway database, once the service has started it. */
export function embeddedUrl(dataDir: string): string {
  const info = JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as {
    host: string;
    port: number;
    user: string;
    password: string;
  };
  const u = new URL('postgres://localhost');
  u.hostname = info.host;
  u.port = String(info.port);
  u.username = info.user;
  u.password = info.password;
  u.pathname = '/trackway';
  return u.toString();
}

const SETTINGS = [
  'fsync',
  'synchronous_commit',
  'wal_sync_method',
  'full_page_writes',
  'shared_buffers',
  'max_connections',
  'max_wal_size',
  'checkpoint_timeout',
  'track_commit_timestamp',
];

export async function inspectDatabase(url: string, kind: 'embedded' | 'external'): Promise<DatabaseFacts> {
  return withClient(url, async (c) => {
    const version = (await c.query<{ v: string }>('SELECT current_setting($1) AS v', ['server_version'])).rows[0]!.v;
    const settings: Record<string, string> = {};
    for (const s of SETTINGS) settings[s] = (await c.query<{ v: string }>('SELECT current_setting($1) AS v', [s])).rows[0]!.v;
    const backend = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const postmasterPid = postmasterOf(backend);
    const cpuScope =
      postmasterPid === undefined
        ? 'not measured (the server is not visible in this machine’s /proc)'
        : kind === 'embedded'
          ? `the embedded cluster (postmaster ${postmasterPid} and its children)`
          : `the whole server (postmaster ${postmasterPid} and its children, every database on it)`;
    return { kind, where: redact(url), version, settings, postmasterPid, cpuScope };
  });
}

/** One table, primary key only: what the durable-limit server writes (one row per request). */
export async function createLimitTable(url: string): Promise<void> {
  await withClient(url, (c) =>
    c.query(
      `CREATE TABLE IF NOT EXISTS ${LIMIT_TABLE} (
         id bigserial PRIMARY KEY,
         path text NOT NULL,
         client_ip text,
         body jsonb NOT NULL
       )`,
    ),
  );
}

export { withClient };

/**
 * Between scenarios: VACUUM (ANALYZE) of the whole database, then a
 * CHECKPOINT, so that the next scenario does not pay for the last one's
 * writes. Without it, autovacuum of what a scenario left (millions of events
 * after mixed, the limit's own table too) ran during the next one's rounds
 * and counted as its PostgreSQL CPU and WAL: the dispatch rounds right after
 * mixed took 1,969 and 816 µs of PostgreSQL per delivery and 16,627 B of WAL
 * in the first, against 92–108 µs and ~1,450 B in the later ones (the
 * seventh stop's default run, BENCHMARKS.md). A scenario's own autovacuum
 * still runs, and counts, in its rounds. Returns the seconds each step took.
 */
export async function settleDatabase(url: string): Promise<{ vacuum: number; checkpoint: number | null }> {
  return withClient(url, async (c) => {
    const t0 = performance.now();
    await c.query('VACUUM (ANALYZE)');
    const t1 = performance.now();
    // CHECKPOINT needs a superuser or pg_checkpoint (PostgreSQL 15+): without it, the vacuum alone
    const checkpointed = await c.query('CHECKPOINT').then(
      () => true,
      () => false,
    );
    const secs = (ms: number) => Math.round(ms / 100) / 10;
    return { vacuum: secs(t1 - t0), checkpoint: checkpointed ? secs(performance.now() - t1) : null };
  });
}

/** Whether the server keeps commit timestamps (the mixed scenario's exact commit → arrival needs them). */
export async function commitTimestampsOn(url: string): Promise<boolean> {
  return withClient(url, async (c) => (await c.query<{ v: string }>(`SELECT current_setting('track_commit_timestamp') AS v`)).rows[0]!.v === 'on');
}

/** Turns commit timestamps on for the next start of the server (ALTER SYSTEM: the bench's own embedded cluster only). */
export async function enableCommitTimestamps(url: string): Promise<void> {
  await withClient(url, (c) => c.query('ALTER SYSTEM SET track_commit_timestamp = on'));
}

/** The same server, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = '/' + database;
  return u.toString();
}
