// The circuit breaker's state shared by every dispatcher process (docs/design.md
// "Trust"): two dispatchers on one database both pause a failing endpoint,
// and each cool-down lets exactly one probe through, whichever takes it.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, enqueue, eventually, many, SCHEDULE, sleep } from '../support/webhook-fixtures.ts';

describe('circuit breaker', function () {
  this.timeout(60_000);
  describe('shared by two dispatchers on one database', () => {
    let database: TestDatabase;
    const servers: { running: RunningServer; close(): Promise<void> }[] = [];
    let r: TestReceiver;

    before(async () => {
      database = await freshDatabase();
      r = await TestReceiver.start(() => ({ status: 502 }));
      const config = loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
        TRACKWAY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
        LOG_LEVEL: 'silent',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
        GEOIP_DB: 'off',
      });
      for (let i = 0; i < 2; i++) {
        const handle = createDb(database.url, { max: 10, onError: () => {} });
        const running = await startOnDatabase(config, handle, createLogger('silent'), {
          dispatcher: true,
          dispatcherOptions: { breaker: { threshold: 5, cooldownMs: 1_500, maxCooldownMs: 1_500 } },
        });
        servers.push({ running, close: async () => (await running.close(), await handle.close()) });
      }
    });
    after(async () => {
      for (const s of servers) await s.close();
      await r.close();
      await database.drop();
    });

    it('pauses the endpoint for both, and only one of them probes', async () => {
      const deps = servers[0]!.running.deps;
      const tenant = await createTenant(deps.db, deps.tokens);
      const hook = await createIntegration(deps.db, deps.cipher, tenant.orgId, { endpoint: r.url });
      await enqueue(deps.db, hook, many(tenant.orgId, 40, 'two'));
      const health = () =>
        deps.db
          .selectFrom('webhook_endpoint_health')
          .selectAll()
          .where('org_id', '=', tenant.orgId)
          .where('integration_id', '=', hook.id)
          .executeTakeFirst();
      const opened = await eventually(
        async () => {
          const h = await health();
          return h && h.opened_count > 0 ? h : undefined;
        },
        10_000,
        'the breaker to open',
      );
      await sleep(300); // attempts both had in flight finish
      const sent = r.requests.length;
      await sleep(Math.max(0, opened.paused_until!.getTime() - Date.now() - 300));
      expect(r.requests.length, 'attempts by either dispatcher while paused').to.equal(sent);
      // each cool-down lets exactly one probe through, whichever dispatcher takes it
      await r.waitFor(sent + 1, 5_000);
      await sleep(1_000);
      expect(r.requests.length, 'probes after one cool-down').to.equal(sent + 1);
      const pending = await deps.db
        .selectFrom('deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('org_id', '=', tenant.orgId)
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      expect(Number(pending.n)).to.equal(40);
    });
  });
});
