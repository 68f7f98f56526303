// Work-conserving fair shares (issue 22, point 1). The attack as reported:
// one platform account registered 5 organisations, gave each 16 integrations
// whose endpoints answer 200 after 29 s (httpTimeout 30) and sent them
// exports; 4 organisations × the old per-organisation share of 128 took the
// whole capacity of 512, endpoints that succeed slowly never trip the
// breaker, and another organisation's deliveries took p50 12.9 s, max 25 s.
//
// Here the seconds and the capacity are scaled down so that one test process
// (server, dispatcher, receivers) keeps its timing on a loaded machine: the
// endpoints answer 200 after 4 s with httpTimeout 6 (slow, and successful),
// WEBHOOK_SLOW_ENDPOINT is 1s (default 2s) and WEBHOOK_DISPATCH_CAPACITY 128
// with a reserve of 16 (default 512 and 64; the old fairness tests run at the
// defaults). The shape is kept: the slow organisations could hold
// 5 × 16 × 8 = 640 requests, five times the whole capacity. The healthy
// organisation is another merchant of the same platform account (owning
// every organisation gives nothing).
// The test waits on events (a delivery arriving, the pool filling, every
// slow delivery delivered), never on a fixed sleep.
import { expect } from 'chai';
import type { NewDelivery } from '../../src/webhooks/outbox.repository.ts';
import { enqueueDeliveries } from '../../src/webhooks/outbox.repository.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { eventually, matchedBody } from '../support/webhook-fixtures.ts';
import { type Account, newAccount, newMerchant, newWebhook } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../support/org-id.ts';

// How long the slow endpoints take to answer: the window in which the flood holds the pool and the healthy
// organisation's identifies are counted. On a Citus cluster each organisation's first claim is a
// distributed statement, and 70 of them took most of 4 s on a loaded two-core machine (the whole suite,
// 27 November: no identify inside the window), so there the endpoints answer after 8 s (their timeout
// above it).
const SLOW_MS = process.env.TEST_CITUS_WORKERS ? 8_000 : 4_000;
const SLOW_TIMEOUT = String(SLOW_MS / 1000 + 2);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

describe('fair shares whoever owns the organisations (issue 22, point 1)', function () {
  this.timeout(120_000);
  let srv: TestServer;
  const receivers: TestReceiver[] = [];
  let victimSeq = 0;

  before(async () => {
    srv = await startTestServer(
      {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_SLOW_ENDPOINT: '1s',
        WEBHOOK_DISPATCH_CAPACITY: '128',
        WEBHOOK_DISPATCH_RESERVE: '16',
        // the healthy organisation identifies a new visitor every few milliseconds for the whole flood
        TRACKING_IDENTIFY_RATE_LIMIT: '100000/1m',
      },
      { dispatcher: true },
    );
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await srv.stop();
  });

  async function metric(name: string): Promise<number> {
    const text = (await srv.api.get('/metrics', { unchecked: true })).text;
    const m = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  }

  async function delivered(orgIds: OrgId[]): Promise<{ delivered: number; other: number }> {
    const rows = await srv.deps.db
      .selectFrom('deliveries')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('org_id', 'in', orgIds)
      .groupBy('status')
      .execute();
    const n = (s: string) => Number(rows.find((r) => r.status === s)?.n ?? 0);
    return { delivered: n('delivered'), other: rows.reduce((a, r) => a + Number(r.n), 0) - n('delivered') };
  }

  /**
   * `orgs` organisations of one platform account with `hooks` slow integrations
   * each, enough deliveries for more than the pool, all committed in one
   * transaction; meanwhile another merchant of the same account identifies
   * visitors one after the other until every slow delivery is delivered.
   */
  async function flood(orgs: number, hooks: number) {
    const { global: C, reserve: R, perIntegration: P } = srv.deps.config.webhookShare;
    const pool = C - R;
    expect(orgs * hooks * P, 'the slow organisations could hold more than the whole capacity').to.be.above(C);
    const account: Account = await newAccount(srv);
    const slow = await TestReceiver.start(() => ({ status: 200, delayMs: SLOW_MS }));
    receivers.push(slow);
    const base = `http://127.0.0.1:${slow.port}`;
    const slowOrgs: OrgId[] = [];
    const rows: NewDelivery[] = [];
    // more than each organisation's fair share of the pool
    const each = Math.ceil(pool / (orgs * hooks)) + 1;
    for (let o = 0; o < orgs; o++) {
      const orgId = (await newMerchant(srv, account)).organisation.id;
      slowOrgs.push(orgId);
      for (let h = 0; h < hooks; h++) {
        const hook = await newWebhook(srv, account, orgId, { endpoint: `${base}/o${o}/h${h}`, httpTimeout: SLOW_TIMEOUT });
        for (let i = 0; i < each; i++) {
          const contact = `slow-${o}-${h}-${i}@example.com`;
          rows.push({ orgId, integrationId: hook.id, kind: 'matched', body: JSON.stringify(matchedBody(orgId, contact)), contact });
        }
      }
    }
    const total = rows.length;
    expect(total).to.be.above(pool);

    // the healthy organisation: another merchant of the same platform account, a fast endpoint
    const victim = (await newMerchant(srv, account)).organisation.id;
    const ok = await TestReceiver.start(() => ({ status: 204 }));
    receivers.push(ok);
    await newWebhook(srv, account, victim, { endpoint: ok.url, do_events: false });

    const started = Date.now();
    await srv.deps.db.transaction().execute((tx) => enqueueDeliveries(tx, rows));
    // the flood fills the pool: every slot but the reserve holds a delivery to a slow endpoint
    const held = async () =>
      (await metric('trackway_webhook_held_deliveries{state="in_flight"}')) + (await metric('trackway_webhook_held_deliveries{state="waiting"}'));
    await eventually(async () => ((await held()) === pool ? true : undefined), 20_000, 'the pool to fill');
    const atFill = {
      share: await metric('trackway_webhook_fair_share'),
      largest: await metric('trackway_webhook_largest_organisation_held'),
      atShare: await metric('trackway_webhook_organisations_at_share'),
    };
    expect(atFill.atShare, 'organisations holding their fair share').to.equal(orgs);
    expect(atFill.largest, 'no slow organisation holds more than its fair share').to.be.at.most(Math.ceil(pool / orgs));

    const latencies: number[] = [];
    let duringFill = 0;
    let slowLanes = 0;
    let poolFull = true;
    for (let i = 0; ; i++) {
      const k = ++victimSeq;
      const email = `victim-${k}@example.com`;
      const before = ok.requests.length;
      const r = await srv.api.get(`/jsv1/identify/${victim}/r-v${k}/c-v${k}/${b64url({ email })}`);
      expect(r.status, r.text).to.equal(200);
      // the identify answers after its transaction (and the delivery it caused) committed
      const committed = Date.now();
      const [req] = (await ok.waitFor(before + 1, 5_000)).slice(before);
      expect(JSON.parse(req!.body)).to.include({ medium: 'matched', contact: email });
      // (a delivery may even arrive before the answer does)
      latencies.push(Math.max(0, req!.at - committed));
      if (poolFull) {
        // counted while the first wave of slow requests still fills the pool
        poolFull = slow.requests.length <= pool && Date.now() - started < SLOW_MS;
        if (poolFull) duringFill++;
      }
      if (i % 10 === 9) {
        slowLanes = Math.max(slowLanes, await metric('trackway_webhook_slow_integrations'));
        if ((await delivered(slowOrgs)).delivered === total) break;
      }
      expect(Date.now() - started, 'the flood to be over').to.be.below(90_000);
    }
    const floodMs = Date.now() - started;
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `      fair-share figures (${orgs} organisations × ${hooks} slow integrations of one platform account, ${total} deliveries answered after ${SLOW_MS} ms): ` +
        `the pool (${pool}) full, each slow organisation at most ${atFill.largest} (fair share ${atFill.share}); ` +
        `another merchant's contact match, commit → arrival over ${latencies.length} identifies (${duringFill} while the pool was full): ` +
        `p50 ${percentile(sorted, 50)} ms, p99 ${percentile(sorted, 99)} ms, max ${sorted[sorted.length - 1]} ms (bound 1000 ms); ` +
        `slow lanes seen ${slowLanes}; every slow delivery delivered after ${floodMs} ms`,
    );
    expect(duringFill, 'identifies while the pool was full').to.be.at.least(3);
    expect(sorted[sorted.length - 1], 'slowest commit → arrival of the healthy organisation (ms)').to.be.at.most(1000);
    expect(slowLanes, 'slow endpoints got smaller lanes').to.be.above(0);

    // and the slow organisations lost nothing: every delivery made, each once, none failed
    expect(await delivered(slowOrgs)).to.deep.equal({ delivered: total, other: 0 });
    const ids = slow.requests.map((q) => q.headers['webhook-id']);
    expect(new Set(ids).size).to.equal(total);
    expect(ids).to.have.length(total);
  }

  it('delivers another organisation’s notifications within 1 s while 5 organisations of one platform account with 16 slow integrations each fill the capacity, and delivers all of theirs', async () => {
    await flood(5, 16);
  });

  it('does the same when the slow work is spread over 70 organisations of one integration each', async () => {
    await flood(70, 1);
  });
});
