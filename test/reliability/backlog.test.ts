// The bound on the outbox backlog per integration (WEBHOOK_MAX_BACKLOG), with
// a small bound: once an integration has that many pending deliveries, its
// new ones are written failed ("backlog limit reached", listed and retryable
// through the API) instead of pending; events are still acknowledged, other
// integrations are not affected, operators get a metric and one warn line,
// and the limit lifts when the backlog drains.
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startOnDatabase } from '../../src/server.ts';
import { startBacklogMonitor } from '../../src/webhooks/backlog.worker.ts';
import { BACKLOG_ERROR } from '../../src/webhooks/outbox.repository.ts';
import { ApiClient, type BodyOf } from '../support/client.ts';
import { freshDatabase, type TestServer } from '../support/harness.ts';
import { newAccount, newMerchant, newWebhook } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import { testOrgId } from '../support/org-id.ts';

const BOUND = 5;

describe(`the outbox backlog bound (WEBHOOK_MAX_BACKLOG=${BOUND})`, function () {
  this.timeout(60_000);
  let srv: TestServer;
  const lines: Record<string, unknown>[] = [];

  before(async () => {
    const database = await freshDatabase();
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
      TRACKWAY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      TRACKWAY_VALIDATE_RESPONSES: 'true',
      WEBHOOK_MAX_BACKLOG: String(BOUND),
    });
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    // no dispatcher: nothing drains the backlog but the test
    const running = await startOnDatabase(config, database.handle, createLogger('info', sink), { dispatcher: false });
    srv = {
      ...running,
      api: new ApiClient(running.url),
      database,
      config,
      async stop() {
        await running.close();
        await database.drop();
      },
    };
  });
  after(() => srv?.stop());

  it('reads the bound from the environment: 100,000 by default, or off', () => {
    expect(loadConfig({}).webhookMaxBacklog).to.equal(100_000);
    expect(loadConfig({ WEBHOOK_MAX_BACKLOG: '250' }).webhookMaxBacklog).to.equal(250);
    expect(loadConfig({ WEBHOOK_MAX_BACKLOG: 'off' }).webhookMaxBacklog).to.equal(undefined);
    expect(() => loadConfig({ WEBHOOK_MAX_BACKLOG: '0' })).to.throw(/WEBHOOK_MAX_BACKLOG/);
  });

  it('writes new deliveries of an integration at the bound as failed, visible and retryable, and lifts the limit once it drains', async () => {
    const db = srv.database.handle.db;
    const account = await newAccount(srv);
    const m = await newMerchant(srv, account);
    const org = m.organisation.id;
    const full = await newWebhook(srv, account, org, { endpoint: 'https://hooks.example.com/full', do_events: true, do_contacts: true });
    const other = await newWebhook(srv, account, org, { endpoint: 'https://hooks.example.com/other', do_events: false, do_contacts: true });
    const identify = async (core: string) => {
      const r = await srv.api.get(`/jsv1/identify/${org}/r-${core}/${core}/${b64url({ email: `${core}@visitors.example` })}`);
      expect(r.status).to.equal(200);
    };
    const event = async (core: string, i: number) => {
      const r = await srv.api.post(`/jsv1/${org}/r-${core}/${core}/null/event/view`, { page: `https://shop.example/${i}` });
      expect(r.status, 'events are acknowledged whatever the backlog').to.equal(202);
    };
    const deliveries = (integrationId: number) =>
      db
        .selectFrom('deliveries')
        .select(['id', 'status', 'last_error', 'attempts_count'])
        .where('org_id', '=', org)
        .where('integration_id', '=', integrationId)
        .orderBy('id')
        .execute();
    const metrics = async () => (await srv.api.get('/metrics', { unchecked: true })).text;
    const warnings = () => lines.filter((l) => l.level === 40 && String(l.msg).includes('webhook backlog limit'));

    // 1 contact match + 6 exports for `full` (over the bound); 1 match for `other`
    await identify('v1');
    for (let i = 0; i < 6; i++) await event('v1', i);
    expect((await deliveries(full.id)).map((d) => d.status)).to.deep.equal(Array(7).fill('pending'));

    const status = await srv.webhooks.backlog.check();
    expect(status.limited.map((l) => l.integration_id)).to.deep.equal([full.id]);
    expect(status.maxPending).to.equal(BOUND);
    expect(warnings()).to.have.length(1);
    expect(warnings()[0]).to.include({ orgId: org, integrationId: full.id, maxBacklog: BOUND });
    const m1 = await metrics();
    expect(m1).to.match(/^trackway_webhook_backlog_limited_integrations 1$/m);
    expect(m1).to.match(/^trackway_webhook_backlog_limit_reached_total 1$/m);
    expect(m1).to.match(/^trackway_webhook_backlog_max_pending 5$/m);

    // over the bound: new deliveries of `full` are kept as failed, `other` is untouched
    for (let i = 6; i < 9; i++) await event('v1', i);
    await identify('v2');
    const after = await deliveries(full.id);
    expect(after).to.have.length(11);
    expect(after.slice(7).map((d) => [d.status, d.last_error, d.attempts_count])).to.deep.equal(Array(4).fill(['failed', BACKLOG_ERROR, 0]));
    expect((await deliveries(other.id)).map((d) => d.status)).to.deep.equal(['pending', 'pending']);

    // listed by the deliveries API and retryable there
    const list = await srv.api.get<BodyOf<'listDeliveries'>>(
      `/v1/rest/acme/organisations/${org}/deliveries?status=failed&integration_id=${full.id}`,
      { token: account.token },
    );
    expect(list.status).to.equal(200);
    expect(list.body.items.map((d) => d.last_error)).to.deep.equal(Array(4).fill(BACKLOG_ERROR));
    const retried = await srv.api.post<BodyOf<'retryDelivery'>>(`/v1/rest/acme/deliveries/${list.body.items[0]!.id}/retry`, undefined, {
      token: account.token,
    });
    expect(retried.status, retried.text).to.equal(200);
    expect(retried.body.status).to.equal('pending');

    // the warning is not repeated at every check (at most once a minute while the limit holds)
    await srv.webhooks.backlog.check();
    await srv.webhooks.backlog.check();
    expect(warnings()).to.have.length(1);

    // the backlog drains (as the dispatcher would): the limit lifts and new deliveries queue again
    await db
      .updateTable('deliveries')
      .set({ status: 'delivered', next_attempt_at: null })
      .where('integration_id', '=', full.id)
      .where('status', '=', 'pending')
      .execute();
    const drained = await srv.webhooks.backlog.check();
    expect(drained.limited).to.deep.equal([]);
    expect(lines.some((l) => l.level === 30 && l.integrationId === full.id && String(l.msg).includes('back under its limit'))).to.equal(true);
    expect(await metrics()).to.match(/^trackway_webhook_backlog_limited_integrations 0$/m);
    await event('v1', 99);
    expect((await deliveries(full.id)).at(-1)!.status).to.equal('pending');
  });

  it('releases every limit when the bound is turned off', async () => {
    const db = srv.database.handle.db;
    await db
      .insertInto('webhook_backlog_limits')
      .values({ org_id: testOrgId(1), integration_id: 424242, pending: 9 })
      .execute();
    const monitor = startBacklogMonitor({ ...srv.deps, config: { ...srv.deps.config, webhookMaxBacklog: undefined } });
    try {
      for (let i = 0; i < 100; i++) {
        if ((await db.selectFrom('webhook_backlog_limits').select('integration_id').execute()).length === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await db.selectFrom('webhook_backlog_limits').select('integration_id').execute()).to.deep.equal([]);
    } finally {
      monitor.stop();
    }
  });
});
