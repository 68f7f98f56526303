// The webhook runtime inside a server: a graceful stop with a request still
// in flight, --no-dispatcher, and the LISTEN connection surviving the loss
// of its backend.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { announceIntegrationChange } from '../../src/webhooks/targets.service.ts';
import { type TestDatabase, freshDatabase } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, enqueue, eventually, matchedBody } from '../support/webhook-fixtures.ts';
import { testOrgId } from '../support/org-id.ts';

describe('webhook runtime lifecycle', function () {
  this.timeout(30_000);
  let database: TestDatabase;
  let dataDir: string;
  const running: RunningServer[] = [];

  beforeEach(async () => {
    database = await freshDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-lifecycle-'));
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.close()));
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function start(dispatcher: boolean): Promise<RunningServer> {
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      TRACKWAY_DATA_DIR: dataDir,
      TRACKWAY_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '100ms,200ms',
    });
    const r = await startOnDatabase(config, database.handle, createLogger(config.logLevel), { dispatcher });
    running.push(r);
    return r;
  }

  it('a graceful stop interrupts a request still unanswered after the grace period and leaves it due at once', async () => {
    const receiver = await TestReceiver.start((_req, i) => (i === 0 ? { status: 200, hold: true } : { status: 200 }));
    try {
      const first = await start(true);
      const tenant = await createTenant(database.handle.db, first.deps.tokens);
      const hook = await createIntegration(database.handle.db, first.deps.cipher, tenant.orgId, { endpoint: receiver.url, httpTimeout: 20 });
      const [id] = await enqueue(database.handle.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
      await receiver.waitFor(1);
      await first.close();

      const row = await database.handle.db
        .selectFrom('deliveries')
        .select(['status', 'attempts_count', 'schedule_start', sql<boolean>`next_attempt_at <= now()`.as('due')])
        .where('id', '=', id!)
        .executeTakeFirstOrThrow();
      // recorded, due again at once (not after the 20 s lease), without using a step of the schedule
      expect(row).to.deep.equal({ status: 'pending', attempts_count: 1, schedule_start: 1, due: true });
      const [attempt] = await database.handle.db.selectFrom('delivery_attempts').selectAll().where('delivery_id', '=', id!).execute();
      expect(attempt!.error).to.match(/^interrupted/);
      expect(attempt!.status_code).to.equal(null);

      await start(true);
      const [held, again] = await receiver.waitFor(2);
      expect(again!.headers['webhook-id']).to.equal(held!.headers['webhook-id']);
      await eventually(async () => {
        const d = await database.handle.db.selectFrom('deliveries').select('status').where('id', '=', id!).executeTakeFirstOrThrow();
        return d.status === 'delivered' ? true : undefined;
      });
    } finally {
      await receiver.close();
    }
  });

  it('runs no dispatcher when told not to, but still listens for integration changes', async () => {
    const srv = await start(false);
    expect(srv.webhooks.dispatcher).to.equal(undefined);
    await srv.webhooks.notifications.ready;
  });

  it('reconnects the LISTEN connection after its backend is terminated, and keeps invalidating cached targets', async () => {
    const srv = await start(false);
    await srv.webhooks.notifications.ready;
    const invalidated: number[] = [];
    const original = srv.deps.targets.invalidate.bind(srv.deps.targets);
    srv.deps.targets.invalidate = (orgId) => {
      invalidated.push(orgId);
      original(orgId);
    };
    const announce = (orgId: number) => database.handle.db.transaction().execute((tx) => announceIntegrationChange(tx, testOrgId(orgId)));

    await announce(4141);
    await eventually(async () => (invalidated.includes(4141) ? true : undefined));

    let reconnects = 0;
    srv.webhooks.notifications.onConnect(() => reconnects++);
    const killed = await sql<{ ok: boolean }>`
      SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
      WHERE application_name = 'trackway-listen' AND datname = current_database()
    `.execute(database.handle.db);
    expect(killed.rows).to.have.length(1);
    await eventually(async () => (reconnects > 0 ? true : undefined));

    await announce(4242);
    await eventually(async () => (invalidated.includes(4242) ? true : undefined));
  });
});
