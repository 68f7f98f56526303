// The plain batch (src/tracking/plain-batch.service.ts): events that need no stitching
// and cause no delivery are stored by one statement outside a transaction.
// It must store exactly what the transaction path (processBatch) stores, and
// be chosen only when nothing else is needed.
import { expect } from 'chai';
import { sql } from 'kysely';
import { VISITOR_TOUCH_SECONDS } from '../../src/identity/visitors-upsert.repository.ts';
import { prepareBatch, processBatch, storeBatch } from '../../src/tracking/batch.service.ts';
import type { EventItem, IdentifyItem, IngestItem } from '../../src/tracking/ingest.types.ts';
import { isPlainBatch, storePlainBatch } from '../../src/tracking/plain-batch.service.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type OrgId } from '../support/org-id.ts';
import { pageView } from '../support/ingest.ts';
import { untilWaitingOnLock } from '../support/statements.ts';

const event = pageView;

describe('tracking: a plain batch is one statement that stores what the transaction stores', () => {
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;
  let org: OrgId;
  before(async () => {
    receiver = await TestReceiver.start();
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    account = await newAccount(srv);
    org = (await newMerchant(srv, account)).organisation.id;
  });
  after(async () => {
    await srv.stop();
    await receiver.close();
  });

  const visitor = async (core: string) =>
    (
      await sql<{
        xmin: string;
        roaming_id: string;
        corex_id: string | null;
        first_seen: Date;
        last_seen: Date;
        user_agent: string;
        location: unknown;
      }>`
        SELECT xmin::text AS xmin, roaming_id, corex_id, first_seen, last_seen, user_agent, location
        FROM visitors WHERE org_id = ${org} AND core_id = ${core}`.execute(srv.deps.db)
    ).rows[0];
  const eventsOf = async (core: string) =>
    (
      await sql<{ name: string; roaming_id: string; corex_id: string | null; received_at: Date; body: unknown }>`
        SELECT name, roaming_id, corex_id, received_at, body FROM events WHERE org_id = ${org} AND core_id = ${core} ORDER BY id`.execute(srv.deps.db)
    ).rows;

  it('is chosen only for events without corex_id, for organisations that export no events', () => {
    const none = () => false;
    expect(isPlainBatch([event(1, 'a'), event(1, 'b', { name: 'categoryview' })], none)).to.equal(true);
    expect(isPlainBatch([event(1, 'a'), event(1, 'b', { corexId: 'cx' })], none), 'a corex_id may stitch').to.equal(false);
    // the kinds identity records write their profile in the same statement (plain-batch-profile.test.ts)
    for (const name of ['productview', 'updatecart', 'checkout', 'buy'] as const) {
      expect(isPlainBatch([event(1, 'a', { name })], none), name).to.equal(true);
      expect(isPlainBatch([event(1, 'a', { name, corexId: 'cx' })], none), name).to.equal(false);
    }
    expect(
      isPlainBatch([event(1, 'a'), event(2, 'b')], (o) => o === 2),
      'an exporting organisation',
    ).to.equal(false);
    const identify = { ...event(1, 'a'), kind: 'identify', claim: { contacts: [], name: null } } as unknown as IdentifyItem;
    expect(isPlainBatch([event(1, 'b'), identify], none)).to.equal(false);
  });

  it('stores the same visitors and events as the transaction path', async () => {
    const t0 = new Date(Date.now() - 1000);
    const t1 = new Date(t0.getTime() + 500);
    const batch = (a: string, b: string): EventItem[] => [
      event(org, a, { receivedAt: t0, userAgent: null, location: null }),
      event(org, b, { receivedAt: t0, name: 'categoryview', body: { category: 'shoes' } }),
      event(org, a, { receivedAt: t1, roamingId: 'r2', userAgent: 'UA/2', body: { page: 'https://shop.example/2' } }),
    ];
    const [pa, pb, ta, tb] = [unique('p'), unique('p'), unique('t'), unique('t')];
    await storePlainBatch(srv.deps.db, batch(pa, pb));
    await srv.deps.db.transaction().execute(async (tx) => processBatch(tx, await prepareBatch(srv.deps, tx, batch(ta, tb))));
    for (const [p, t] of [
      [pa, ta],
      [pb, tb],
    ] as const) {
      const [plain, txn] = [await visitor(p), await visitor(t)];
      expect(plain, p).to.not.equal(undefined);
      expect({ ...plain, xmin: 0 }).to.deep.equal({ ...txn, xmin: 0 });
      expect(await eventsOf(p)).to.deep.equal(await eventsOf(t));
    }
    expect((await visitor(pa))!.user_agent).to.equal('UA/2');
    expect((await eventsOf(pa)).map((e) => e.roaming_id)).to.deep.equal(['r1', 'r2']);
  });

  it('leaves a fresh, unchanged returning visitor alone and rewrites a stale or changed one', async () => {
    const [fresh, stale, changed] = [unique('c'), unique('c'), unique('c')];
    await storePlainBatch(srv.deps.db, [event(org, fresh), event(org, stale), event(org, changed)]);
    await sql`UPDATE visitors SET last_seen = now() - make_interval(secs => ${VISITOR_TOUCH_SECONDS + 5}) WHERE org_id = ${org} AND core_id = ${stale}`.execute(
      srv.deps.db,
    );
    const before = { fresh: await visitor(fresh), stale: await visitor(stale), changed: await visitor(changed) };
    await storePlainBatch(srv.deps.db, [event(org, fresh), event(org, stale), event(org, changed, { userAgent: 'UA/9' })]);
    expect((await visitor(fresh))!.xmin, 'not rewritten nor locked').to.equal(before.fresh!.xmin);
    expect((await visitor(stale))!.last_seen.getTime()).to.be.greaterThan(before.stale!.last_seen.getTime());
    expect((await visitor(changed))!.user_agent).to.equal('UA/9');
    for (const c of [fresh, stale, changed]) expect(await eventsOf(c)).to.have.length(2);
  });

  it('touches a new visitor that another batch inserted after its snapshot, once that batch commits', async () => {
    const core = unique('c');
    const first = new Date(Date.now() - 1000);
    let second: Promise<void> | undefined;
    await srv.deps.db.transaction().execute(async (tx) => {
      await storePlainBatch(tx, [event(org, core, { receivedAt: first })]);
      // the second batch's statement takes its snapshot, then waits on the uncommitted row's key
      second = storePlainBatch(srv.deps.db, [event(org, core, { userAgent: 'UA/2' })]);
      await untilWaitingOnLock(srv.deps.db, 'INSERT INTO visitors', 'the second batch waits for the first');
    });
    await second;
    const v = (await visitor(core))!;
    expect(v.user_agent, 'the touch is not lost').to.equal('UA/2');
    expect(v.last_seen.getTime()).to.be.greaterThan(first.getTime());
    expect(await eventsOf(core)).to.have.length(2);
  });

  it('goes through the transaction, which writes the exports, when the organisation exports events', async () => {
    const exporting = (await newMerchant(srv, account)).organisation.id;
    await newWebhook(srv, account, exporting, { endpoint: receiver.url });
    const core = unique('c');
    const payload = Buffer.from(JSON.stringify({ email: `${unique('e')}@x.example` })).toString('base64url');
    const identified = await srv.api.get(`/jsv1/identify/${exporting}/r1/${core}/${payload}`);
    expect(identified.status, identified.text).to.equal(200);
    const exports = async () =>
      Number(
        (await sql<{ n: string }>`SELECT count(*) AS n FROM deliveries WHERE org_id = ${exporting} AND kind = 'event'`.execute(srv.deps.db)).rows[0]!
          .n,
      );
    const before = await exports();
    const items: IngestItem[] = [event(exporting, core)];
    await storeBatch(srv.deps, srv.deps.db, items);
    expect(await exports()).to.equal(before + 1);
  });
});
