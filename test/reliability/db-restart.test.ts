// PostgreSQL stopped and started again under load (docs/design.md "Quality bars"),
// on an embedded cluster of this test's own: once with a fast shutdown
// (sessions get 57P01) and once with an immediate one (crash recovery from
// the WAL on start). During each outage every request is answered 503 with
// Retry-After in its area's error shape, /readyz answers 503, and nothing
// else (no 500, no 401 for a valid token); afterwards the same process
// recovers on its own (pool, LISTEN connection, dispatcher) and nothing that
// was acknowledged is lost. Prints the figures RELIABILITY.md quotes.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createDb, type DbHandle, migrate } from '../../src/db/database.ts';
import { type EmbeddedCluster, runningPostmaster, startEmbedded, stopEmbedded } from '../../src/db/embedded.ts';
import { isUnavailable } from '../../src/http/errors.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { INTEGRATIONS_CHANNEL } from '../../src/webhooks/targets.service.ts';
import { ApiClient, type Reply } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, type Tenant } from '../support/webhook-fixtures.ts';
import { startLoad, storedMarkers, until } from './load.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a PostgreSQL restart under load', function () {
  this.timeout(240_000);
  let dir: string;
  let cluster: EmbeddedCluster;
  let handle: DbHandle;
  let server: RunningServer;
  let receiver: TestReceiver;
  let api: ApiClient;
  let tenant: Tenant;
  const logLines: string[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-dbrestart-'));
    cluster = await startEmbedded({ dataDir: dir, ephemeral: true });
    const admin = new pg.Client({ connectionString: cluster.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE trackway');
    await admin.end();
    handle = createDb(cluster.url('trackway'), { max: 20, onError: () => {} });
    await migrate(handle.db);
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      TRACKWAY_DATA_DIR: dir,
      TRACKWAY_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,1s,1s,1s,1s,1s',
      TRACKWAY_VALIDATE_RESPONSES: 'true',
      LOG_LEVEL: 'warn',
      // the load stands for many clients but comes from one address: the tracking limits (on by default) are not what this test is about
      TRACKING_RATE_LIMIT: 'off',
    });
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    server = await startOnDatabase(config, handle, createLogger('warn', sink), { dispatcher: true });
    api = new ApiClient(server.url);
    receiver = await TestReceiver.start((_req, i) => ({ status: 204, delayMs: i % 5 }));
    tenant = await createTenant(handle.db, server.deps.tokens, 'acme');
    await createIntegration(handle.db, server.deps.cipher, tenant.orgId, { endpoint: receiver.url, httpTimeout: 2 });
  });

  after(async () => {
    await server?.close();
    await handle?.close();
    await receiver?.close();
    if (dir) {
      await stopEmbedded(dir).catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  /** Requests of every area while the database is down: 503 + Retry-After in the area's shape (the client checks the contract). */
  async function probeOutage(): Promise<void> {
    const ready = await api.get('/readyz');
    expect(ready.status).to.equal(503);
    expect(ready.body).to.deep.equal({ status: 'unavailable' });
    expect(ready.headers.get('retry-after')).to.match(/^\d+$/);
    const checks: [Promise<Reply>, Record<string, unknown>][] = [
      [api.post(`/jsv1/${tenant.orgId}/r-probe/c-probe/null/event/view`, { page: 'https://shop.example/probe' }), { error: 'unavailable' }],
      [api.get(`/jsv1/identify/${tenant.orgId}/r-probe/c-probe/eyJlbWFpbCI6InBAeC5pbyJ9`), { error: 'unavailable' }],
      // a valid bearer token: the database outage must not read as 401
      [api.get('/v1/rest/acme/organisations', { token: tenant.token }), { code: 5030 }],
      [api.post('/v1/rest/acme/users/login', { email: 'someone@x.example', password: 'whatever' }), { code: 5030 }],
      [api.post('/rest/v1/learn/event', { org_token: 'no-such-token', eventName: 'e', eventVal: 'v' }), { status: 'failed', code: 5503 }],
    ];
    for (const [reply, shape] of checks) {
      const r = await reply;
      expect(r.status, JSON.stringify(r.body)).to.equal(503);
      expect(r.body).to.include(shape);
      expect(r.headers.get('retry-after')).to.match(/^\d+$/);
    }
  }

  it('answers 503 + Retry-After during two outages, recovers without a restart, and loses nothing acknowledged', async () => {
    const db = handle.db;
    const notifications = server.webhooks.notifications;
    let reconnects = 0;
    notifications.onConnect(() => reconnects++);
    const load = startLoad({ base: () => server.url, orgId: tenant.orgId, workers: 8, eventsPerVisitor: 10, tag: 'pgrestart', pauseMs: 3 });
    const timeline: string[] = [];
    const pgdata = path.join(dir, 'pg');

    for (const [round, mode] of [
      [1, 'fast'],
      [2, 'immediate'],
    ] as const) {
      await until(() => load.acked >= round * 300, 60_000, `the load before outage ${round}`);
      const before = { acked: load.acked, refusals: load.figures.refusals.length, reconnects };
      const port = cluster.info.port;
      if (mode === 'fast') await stopEmbedded(dir);
      else {
        // immediate shutdown: no checkpoint, crash recovery from the WAL on the next start
        process.kill(runningPostmaster(pgdata)!, 'SIGQUIT');
        await until(() => runningPostmaster(pgdata) === undefined, 30_000, 'PostgreSQL to stop');
      }
      await until(() => load.figures.refusals.length > before.refusals, 30_000, 'the load to see the outage');
      await probeOutage();
      await sleep(1_000); // the load keeps knocking
      cluster = await startEmbedded({ dataDir: dir, ephemeral: true });
      expect(cluster.info.port, 'PostgreSQL came back on its port').to.equal(port);
      // the same process recovers: requests succeed, /readyz is 200, the LISTEN connection is back
      await until(() => load.acked >= before.acked + 100, 60_000, `the load to recover after outage ${round}`);
      await until(async () => (await api.get('/readyz')).status === 200, 30_000, '/readyz to answer 200');
      await until(() => reconnects > before.reconnects, 30_000, 'the LISTEN connection to reconnect');
      timeline.push(`${mode} shutdown: ${load.figures.refusals.length - before.refusals} requests answered 503`);
    }
    const heard = new Promise<string>((resolve) => notifications.on(INTEGRATIONS_CHANNEL, resolve));
    await pg_notify(cluster.url('trackway'), INTEGRATIONS_CHANNEL, '424242');
    expect(await heard).to.equal('424242');
    await until(() => load.acked >= 900, 60_000, 'the load after the outages');
    const figures = await load.stop();

    // every refusal was a 503 with Retry-After in the tracking shape; nothing else
    const odd = figures.refusals.filter(
      (r) =>
        !(r.status === 503 && r.retryAfter !== null && /^application\/json/.test(r.contentType ?? '') && JSON.parse(r.body).error === 'unavailable'),
    );
    expect(odd.map((r) => `${r.status} ${r.body}`)).to.deep.equal([]);
    expect(
      logLines.filter((l) => l.includes('unhandled error')),
      'no 500 was answered',
    ).to.deep.equal([]);

    // nothing acknowledged is lost
    const stored = await storedMarkers(db, tenant.orgId);
    const lost = figures.acknowledged.filter((u) => !stored.has(u));
    expect(lost, `acknowledged but not stored: ${lost.slice(0, 5).join(', ')}`).to.deep.equal([]);

    // the dispatcher is back too: every delivery made (deliveries queued before, during and after the outages)
    await until(
      async () => (await db.selectFrom('deliveries').select('id').where('status', '<>', 'delivered').limit(1).execute()).length === 0,
      90_000,
      'every delivery to be delivered',
    );
    const rows = await db.selectFrom('deliveries').select(['webhook_id']).where('org_id', '=', tenant.orgId).execute();
    const received = new Set(receiver.requests.map((q) => String(q.headers['webhook-id'])));
    const missing = rows.filter((r) => !received.has(r.webhook_id));
    expect(missing).to.deep.equal([]);

    const seen = new Set<string>();
    for (const line of logLines) {
      if (!line.includes('database unavailable')) continue;
      const err = (JSON.parse(line) as { err?: { code?: string; message?: string } }).err;
      seen.add(`${err?.code ?? '-'} ${String(err?.message).slice(0, 60)}`);
    }
    console.log(
      `      db-restart figures: events acknowledged ${figures.acknowledged.length} / stored ${stored.size} (sent ${figures.eventsSent}); ` +
        `${timeline.join('; ')}; deliveries due ${rows.length} / made ${rows.length - missing.length}; LISTEN reconnects ${reconnects}; ` +
        `errors mapped to 503: ${[...seen].join(' | ')}`,
    );
  });

  it('recognises what pg actually throws when PostgreSQL is away as "unavailable"', async () => {
    const errors: [string, unknown][] = [];
    const capture = async (what: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
        errors.push([what, new Error('no error')]);
      } catch (err) {
        errors.push([what, err]);
      }
    };
    // nothing listens on the port
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
    });
    await capture('connection refused', () => new pg.Client({ connectionString: `postgres://u:p@127.0.0.1:${closed}/x` }).connect());
    await capture('connection refused, via the pool', () => {
      const pool = new pg.Pool({ connectionString: `postgres://u:p@127.0.0.1:${closed}/x` });
      return pool.query('SELECT 1').finally(() => pool.end());
    });
    // a server that accepts and never answers: the pool's connect timeout
    const silent = net.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentPort = (silent.address() as net.AddressInfo).port;
    await capture('pool connect timeout', () => {
      const pool = new pg.Pool({ connectionString: `postgres://u:p@127.0.0.1:${silentPort}/x`, connectionTimeoutMillis: 200 });
      return pool.query('SELECT 1').finally(() => pool.end().catch(() => {}));
    });
    await capture('no pool slot within the connect timeout', async () => {
      const pool = new pg.Pool({ connectionString: cluster.url('trackway'), max: 1, connectionTimeoutMillis: 200 });
      const held = await pool.connect();
      try {
        await pool.query('SELECT 1');
      } finally {
        held.release();
        await pool.end();
      }
    });
    await capture('client connect timeout', () =>
      new pg.Client({ connectionString: `postgres://u:p@127.0.0.1:${silentPort}/x`, connectionTimeoutMillis: 200 }).connect(),
    );
    silent.close();
    // a server that hangs up: "Connection terminated unexpectedly"
    const rude = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => rude.listen(0, '127.0.0.1', r));
    await capture('the server hangs up', () =>
      new pg.Client({ connectionString: `postgres://u:p@127.0.0.1:${(rude.address() as net.AddressInfo).port}/x` }).connect(),
    );
    rude.close();
    // a backend terminated by an administrator while a query runs: 57P01
    const victim = new pg.Client({ connectionString: cluster.url('trackway') });
    victim.on('error', () => {});
    await victim.connect();
    const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const running = victim.query('SELECT pg_sleep(30)');
    running.catch(() => {}); // awaited below, once the backend is terminated
    await sleep(100);
    await handle.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    await capture('57P01 while a query runs', () => running);
    await capture('the next query on that client', () => victim.query('SELECT 1'));
    await victim.end().catch(() => {});
    // through Kysely and a transaction: the pool's client dies mid-transaction
    await capture('a transaction whose backend is terminated', () =>
      handle.db.transaction().execute(async (tx) => {
        const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(tx);
        const other = new pg.Client({ connectionString: cluster.url('trackway') });
        await other.connect();
        await other.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        await other.end();
        await sleep(50);
        await tx.selectFrom('organisations').select('id').execute();
      }),
    );
    const report = errors.map(([what, e]) => `${what}: ${(e as { code?: string }).code ?? '-'} ${(e as Error).message}`);
    console.log(`      pg errors seen:\n        ${report.join('\n        ')}`);
    for (const [what, e] of errors) expect(isUnavailable(e), `${what}: ${(e as Error).message}`).to.equal(true);
  });
});

async function pg_notify(url: string, channel: string, payload: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('SELECT pg_notify($1, $2)', [channel, payload]);
  await c.end();
}
