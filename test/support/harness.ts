// Per test file: a fresh database cloned from the migrated template, and the
// app in-process on an ephemeral 127.0.0.1 port.
import pg from 'pg';
import { type Config, loadConfig } from '../../src/config.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, type ServeOptions, startOnDatabase } from '../../src/server.ts';
import { ApiClient } from './client.ts';
import { citusFromEnv, cloneCitusDatabase, dropOnWorkers } from './citus.ts';
import { testDatabaseServer } from './global.ts';
import { INTEGRATIONS_CHANNEL } from '../../src/db/notifications.ts';

let counter = 0;

export interface TestDatabase {
  url: string;
  name: string;
  handle: DbHandle;
  drop(): Promise<void>;
}

async function serverVersion(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ v: string }>('SHOW server_version_num');
  return Number(rows[0]!.v);
}

/** A new database with the current schema, cloned from the run's template. */
export async function freshDatabase(): Promise<TestDatabase> {
  const server = testDatabaseServer();
  const name = `${server.prefix}_${++counter}`;
  // on a Citus cluster (TEST_CITUS_WORKERS): cloned on every node (test/support/citus.ts)
  const citus = citusFromEnv(server.adminUrl);
  if (citus) {
    await cloneCitusDatabase(citus, server.adminUrl, server.template, name);
  } else {
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    try {
      const strategy = (await serverVersion(admin)) >= 150000 ? ' STRATEGY FILE_COPY' : '';
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${server.template}${strategy}`);
    } finally {
      await admin.end();
    }
  }
  const url = server.urlFor(name);
  const handle = createDb(url, { max: 10, onError: () => {} });
  return {
    url,
    name,
    handle,
    async drop() {
      await handle.close();
      const a = new pg.Client({ connectionString: server.adminUrl });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.end();
      if (citus) await dropOnWorkers(citus, [name]);
    },
  };
}

export interface TestServer extends RunningServer {
  api: ApiClient;
  database: TestDatabase;
  config: Config;
  stop(): Promise<void>;
}

/** The app on a fresh database; `env` is read as the process environment would be. */
export async function startTestServer(env: Record<string, string> = {}, opts: ServeOptions = { dispatcher: false }): Promise<TestServer> {
  const database = await freshDatabase();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
    TRACKWAY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    TRACKWAY_VALIDATE_RESPONSES: 'true',
    // scrypt at N = 2^14 instead of the production 2^17 (about 8 times cheaper):
    // the suite makes and logs in hundreds of accounts. The tests of hashing,
    // rehash and login set PASSWORD_HASH_COST=17 (test/platform/passwords.test.ts,
    // login.test.ts), and the CLI tests run child processes at the default.
    PASSWORD_HASH_COST: process.env.TEST_PASSWORD_HASH_COST ?? '14',
    // the dispatcher's requests in flight per integration: the fairness and delivery tests follow it
    ...(process.env.TEST_WEBHOOK_CONCURRENCY ? { WEBHOOK_CONCURRENCY: process.env.TEST_WEBHOOK_CONCURRENCY } : {}),
    ...env,
  });
  const log = createLogger(config.logLevel);
  const running = await startOnDatabase(config, database.handle, log, opts);
  const api = new ApiClient(running.url);
  return {
    ...running,
    api,
    database,
    config,
    async stop() {
      await running.close();
      await database.drop();
    },
  };
}

/**
 * Resolves once the server's LISTEN connection has heard every notification
 * committed before the call: a change to an organisation's integrations (or
 * its settings) reaches the caches asynchronously, and may empty an entry a
 * test has just filled. Notifications are delivered in commit order, so
 * hearing one sent now means the earlier ones have been handled.
 */
export async function notificationsHeard(srv: TestServer, timeoutMs = 10_000): Promise<void> {
  const marker = `heard-${process.pid}-${++counter}`;
  let off = () => {};
  const heard = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the LISTEN connection did not hear ${marker} within ${timeoutMs} ms`)), timeoutMs);
    off = srv.webhooks.notifications.on(INTEGRATIONS_CHANNEL, (payload) => {
      if (payload !== marker) return;
      clearTimeout(timer);
      resolve();
    });
  });
  try {
    await srv.database.handle.pool.query('SELECT pg_notify($1, $2)', [INTEGRATIONS_CHANNEL, marker]);
    await heard;
  } finally {
    off();
  }
}
