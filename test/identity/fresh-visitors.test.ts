// The visitors a process wrote lately (src/identity/fresh-visitors.service.ts):
// the plain batch leaves out a touch its upsert would leave unwritten, and
// only such a touch. Each claim is checked on the stored row: a visitor left
// out of the statement is not even locked (its xmax stays 0), one that
// changed or went stale is written as before, one that carries a mark is
// locked (on plain PostgreSQL by a share lock, not rewritten), and one that
// was erased is made again by its next event (in this process at once, in
// another once the notification arrives).
import { expect } from 'chai';
import { sql } from 'kysely';
import { FreshVisitors, VISITOR_SEEN_FRESH_SECONDS } from '../../src/identity/fresh-visitors.service.ts';
import { deleteVisitors } from '../../src/identity/person-records.service.ts';
import { VISITOR_TOUCH_SECONDS, type VisitorTouch } from '../../src/identity/visitors-upsert.repository.ts';
import { storeBatch } from '../../src/tracking/batch.service.ts';
import type { IdentifyItem } from '../../src/tracking/ingest.types.ts';
import { storePlainBatch } from '../../src/tracking/plain-batch.service.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type OrgId, testOrgId } from '../support/org-id.ts';
import { onCitusCluster } from '../support/citus.ts';
import { until } from '../support/wait.ts';
import { newVisitor, privacyApi, tracker } from '../privacy/helpers.ts';
import { pageView } from '../support/ingest.ts';

const GB = { country_code: 'GB', region: null, city: null, latitude: null, longitude: null, timezone: null };
const event = pageView;

function touch(over: Partial<VisitorTouch> = {}): VisitorTouch {
  const at = new Date('2026-11-27T10:00:00Z');
  return { orgId: testOrgId(7), coreId: 'c1', roamingId: 'r1', corexId: null, firstSeen: at, lastSeen: at, userAgent: 'UA/1', location: GB, ...over };
}

describe('identity: the visitors a process wrote lately', () => {
  describe('the rule (no database)', () => {
    it('takes a touch as unchanged only when the upsert would leave it unwritten', () => {
      const fresh = new FreshVisitors();
      const t = touch();
      expect(fresh.unchanged(t), 'nothing written yet').to.equal(false);
      const later = (s: number) => new Date(t.lastSeen.getTime() + s * 1000);
      fresh.wrote([t], []);
      // sent, not returned: found fresh and unchanged, left out for VISITOR_SEEN_FRESH_SECONDS
      expect(fresh.unchanged(touch({ lastSeen: later(VISITOR_SEEN_FRESH_SECONDS) }))).to.equal(true);
      expect(fresh.unchanged(touch({ lastSeen: later(VISITOR_SEEN_FRESH_SECONDS + 1) }))).to.equal(false);
      fresh.wrote([t], [{ org_id: t.orgId, core_id: t.coreId }]);
      expect(fresh.unchanged(t)).to.equal(true);
      expect(fresh.unchanged(touch({ lastSeen: later(VISITOR_TOUCH_SECONDS) })), 'at the interval').to.equal(true);
      expect(fresh.unchanged(touch({ lastSeen: later(VISITOR_TOUCH_SECONDS + 1) })), 'stale').to.equal(false);
      expect(fresh.unchanged(touch({ roamingId: 'r2' })), 'another roaming_id').to.equal(false);
      expect(fresh.unchanged(touch({ userAgent: 'UA/2' })), 'another user agent').to.equal(false);
      expect(fresh.unchanged(touch({ userAgent: null })), 'no user agent: the stored one is kept').to.equal(true);
      expect(fresh.unchanged(touch({ location: { ...GB, country_code: 'FR' } })), 'another location').to.equal(false);
      expect(fresh.unchanged(touch({ location: null })), 'no location: the stored one is kept').to.equal(true);
      expect(fresh.unchanged(touch({ corexId: 'cx' })), 'a corex_id').to.equal(false);
      expect(fresh.unchanged(touch({ name: 'Ann' })), 'a name').to.equal(false);
      expect(fresh.unchanged(touch({ force: true })), 'forced (an identify)').to.equal(false);
      const other = touch({ coreId: 'c2', corexId: 'cx' });
      fresh.wrote([other], []);
      expect(fresh.unchanged({ ...other, corexId: null }), 'a touch the upsert always writes is not taken as found fresh').to.equal(false);
      expect(fresh.unchanged(touch({ orgId: testOrgId(8) })), 'another organisation').to.equal(false);
    });

    it('keeps what a touch without a user agent or location left stored', () => {
      const fresh = new FreshVisitors();
      const row = [{ org_id: '7', core_id: 'c1' }]; // as pg returns a bigint it was not told to parse: the same key
      fresh.wrote([touch()], row);
      fresh.wrote([touch({ userAgent: null, location: null, lastSeen: new Date('2026-11-27T10:00:30Z') })], row);
      expect(fresh.unchanged(touch({ lastSeen: new Date('2026-11-27T10:01:00Z') })), 'UA/1 and GB are still stored').to.equal(true);
    });

    it('forgets the oldest written first, an organisation on its erasure, and visitors another kind of batch wrote', () => {
      const fresh = new FreshVisitors(2);
      const [a, b, c] = ['a', 'b', 'c'].map((coreId) => touch({ coreId }));
      const written = (t: VisitorTouch) => [{ org_id: t.orgId, core_id: t.coreId }];
      fresh.wrote([a!], written(a!));
      fresh.wrote([b!], written(b!));
      fresh.wrote([a!], written(a!)); // a again: b is now the oldest
      fresh.wrote([c!], written(c!));
      expect([a, b, c].map((t) => fresh.unchanged(t!))).to.deep.equal([true, false, true]);
      fresh.forgetVisitors([{ orgId: a!.orgId, coreId: 'a' }]);
      expect([a, c].map((t) => fresh.unchanged(t!))).to.deep.equal([false, true]);
      const other = touch({ orgId: testOrgId(9), coreId: 'c' });
      fresh.wrote([other], written(other));
      fresh.forget(testOrgId(7));
      expect([fresh.unchanged(c!), fresh.unchanged(other)]).to.deep.equal([false, true]);
      fresh.clear();
      expect(fresh.size).to.equal(0);
    });
  });

  describe('in the plain batch', () => {
    let srv: TestServer;
    let account: Account;
    let org: OrgId;
    before(async () => {
      srv = await startTestServer({}, { dispatcher: false, privacy: { sweepMs: 100 } });
      account = await newAccount(srv);
      org = (await newMerchant(srv, account)).organisation.id;
    });
    after(() => srv.stop());

    const row = async (core: string) =>
      (
        await sql<{ xmax: string; roaming_id: string; user_agent: string | null; last_seen: Date }>`
          SELECT xmax::text AS xmax, roaming_id, user_agent, last_seen FROM visitors WHERE org_id = ${org} AND core_id = ${core}`.execute(srv.deps.db)
      ).rows[0];
    const eventCount = async (core: string) =>
      Number(
        (await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE org_id = ${org} AND core_id = ${core}`.execute(srv.deps.db)).rows[0]!.n,
      );

    it('leaves a fresh, unchanged visitor out of its statement: not even locked, its events stored', async () => {
      const fresh = new FreshVisitors();
      const [kept, left] = [unique('c'), unique('c')];
      await storePlainBatch(srv.deps.db, [event(org, kept), event(org, left)], fresh);
      expect((await row(left))!.xmax, 'inserted, never locked').to.equal('0');
      await storePlainBatch(srv.deps.db, [event(org, kept, { userAgent: 'UA/2' }), event(org, left)], fresh);
      expect((await row(left))!.xmax, 'left out: no lock').to.equal('0');
      expect((await row(kept))!.user_agent, 'a change is written').to.equal('UA/2');
      // without the memory, the same touch is sent and locks the row (ON CONFLICT ... WHERE): what is saved
      await storePlainBatch(srv.deps.db, [event(org, left)]);
      expect((await row(left))!.xmax, 'sent: locked').to.not.equal('0');
      expect(await eventCount(left)).to.equal(3);
      expect(await eventCount(kept)).to.equal(2);
    });

    it('leaves out, for a short while, a visitor another process wrote that it found fresh', async () => {
      const fresh = new FreshVisitors();
      const core = unique('c');
      await storePlainBatch(srv.deps.db, [event(org, core)]); // another process's write
      await storePlainBatch(srv.deps.db, [event(org, core)], fresh);
      const seen = (await row(core))!.xmax;
      expect(seen, 'sent: found fresh under its lock, not rewritten').to.not.equal('0');
      await storePlainBatch(srv.deps.db, [event(org, core)], fresh);
      expect((await row(core))!.xmax, 'left out: not locked again').to.equal(seen);
      const past = new Date(Date.now() + (VISITOR_SEEN_FRESH_SECONDS + 1) * 1000);
      await storePlainBatch(srv.deps.db, [event(org, core, { receivedAt: past })], fresh);
      expect((await row(core))!.xmax, 'past the grace: sent again').to.not.equal(seen);
      expect(await eventCount(core)).to.equal(4);
    });

    it('sends a visitor whose row went stale; one whose event records a mark is locked (a share lock on plain PostgreSQL, the upsert under Citus)', async () => {
      const fresh = new FreshVisitors();
      const [stale, marked] = [unique('c'), unique('c')];
      const long = new Date(Date.now() - (VISITOR_TOUCH_SECONDS + 10) * 1000);
      await storePlainBatch(srv.deps.db, [event(org, stale, { receivedAt: long }), event(org, marked)], fresh);
      await storePlainBatch(srv.deps.db, [event(org, stale)], fresh);
      expect((await row(stale))!.last_seen.getTime(), 'last_seen moved').to.be.greaterThan(long.getTime() + 5_000);
      // a cart needs the person under the visitor's row lock, whatever the memory says
      const version = async () =>
        (await sql<{ xmin: string }>`SELECT xmin::text AS xmin FROM visitors WHERE org_id = ${org} AND core_id = ${marked}`.execute(srv.deps.db))
          .rows[0]!.xmin;
      const written = await version();
      const cart = { product_id: 42, cart_url: 'https://shop.example/cart' };
      await storePlainBatch(srv.deps.db, [event(org, marked, { name: 'updatecart', body: cart })], fresh);
      expect((await row(marked))!.xmax, 'locked').to.not.equal('0');
      if (onCitusCluster()) expect(await version(), 'sent to the upsert, which holds it: a new row version').to.not.equal(written);
      else expect(await version(), 'read with a share lock: no new row version').to.equal(written);
      const profile = await sql<{ last_cart_product_id: string | null }>`
        SELECT p.last_cart_product_id::text FROM persons p JOIN visitors v ON v.org_id = p.org_id AND v.person_id = p.id
        WHERE v.org_id = ${org} AND v.core_id = ${marked}`.execute(srv.deps.db);
      expect(profile.rows.map((r) => r.last_cart_product_id)).to.deep.equal(['42']);
    });

    it('takes a visitor its upsert held for a mark (rewritten with its own values) as found fresh, not as written', async () => {
      const fresh = new FreshVisitors();
      const core = unique('c');
      const earlier = new Date(Date.now() - 30_000);
      await storePlainBatch(srv.deps.db, [event(org, core, { receivedAt: earlier })]); // another process's write, 30 s ago
      const cart = { product_id: 43, cart_url: 'https://shop.example/cart' };
      await storePlainBatch(srv.deps.db, [event(org, core, { name: 'updatecart', body: cart })], fresh);
      const held = (await row(core))!;
      expect(held.last_seen.getTime(), 'held: last_seen as it was').to.equal(earlier.getTime());
      // remembered for the short grace only: past it (and within the upsert's 60 s) the visitor is sent, and locked
      const later = new Date(Date.now() + (VISITOR_SEEN_FRESH_SECONDS + 1) * 1000);
      await storePlainBatch(srv.deps.db, [event(org, core, { receivedAt: later })], fresh);
      expect((await row(core))!.xmax, 'sent again after the grace').to.not.equal(held.xmax);
      expect((await row(core))!.last_seen.getTime(), 'still fresh in the row: not rewritten').to.equal(earlier.getTime());
    });

    it('forgets the visitors of a batch that takes another path', async () => {
      const core = unique('c');
      await storeBatch(srv.deps, srv.deps.db, [event(org, core)]);
      const t = touch({ orgId: org, coreId: core, lastSeen: new Date() });
      expect(srv.deps.freshVisitors.unchanged(t), 'the process remembers its plain batch').to.equal(true);
      const identify = { ...event(org, core), kind: 'identify', claim: { contacts: [], name: 'Ann', verified: false } } as unknown as IdentifyItem;
      await storeBatch(srv.deps, srv.deps.db, [identify]);
      expect(srv.deps.freshVisitors.unchanged(t)).to.equal(false);
    });

    it('makes an erased visitor again with its next event (the erasure forgets it in this process)', async () => {
      const t = tracker(srv, org);
      const v = newVisitor();
      await t.event(v, 'view', { page: 'https://shop.example/1' });
      await t.event(v, 'view', { page: 'https://shop.example/2' });
      const done = await privacyApi(srv, account, org).run({ type: 'erase', subject: { core_id: v.core } });
      expect(done.status).to.equal('done');
      expect(await row(v.core), 'erased').to.equal(undefined);
      await t.event(v, 'view', { page: 'https://shop.example/3' });
      expect(await row(v.core), 'made again').to.not.equal(undefined);
      expect(await eventCount(v.core)).to.equal(1);
    });

    it("forgets an organisation's visitors when another process deletes them (trackway_visitors)", async () => {
      const core = unique('c');
      await storeBatch(srv.deps, srv.deps.db, [event(org, core)]);
      const t = touch({ orgId: org, coreId: core, lastSeen: new Date() });
      expect(srv.deps.freshVisitors.unchanged(t)).to.equal(true);
      // as another process's erasure would: the delete and its notification, nothing in this process told
      await srv.deps.db.transaction().execute((tx) => deleteVisitors(tx, org, [core]));
      await until(() => !srv.deps.freshVisitors.unchanged(t), 5_000, 'the notification to arrive');
      await storeBatch(srv.deps, srv.deps.db, [event(org, core)]);
      expect(await row(core), 'made again').to.not.equal(undefined);
    });
  });
});
