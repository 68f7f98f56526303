// An export holds the person and nobody else (README "Privacy"): two
// shoppers of one organisation with nearly the same data (same products, the
// same first name, emails one character apart), each on two devices; the
// export of one by any of its identifiers is the same document, with every
// contact, visitor, event and notification of that person, and not a single
// identifier of the other. Its result is kept until it expires.
import { expect } from 'chai';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { newVisitor, privacyApi, tracker, type Visitor } from './helpers.ts';

describe('privacy: export', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;

  before(async () => {
    // no dispatcher: the notifications stay pending (an export includes them all the same)
    srv = await startTestServer({}, { dispatcher: false, privacy: { sweepMs: 100 } });
    account = await newAccount(srv);
  });
  after(() => srv?.stop());

  it('holds every contact, visitor, event and notification of the person, and nothing of anyone else', async () => {
    const { id: orgId, domain } = (await newMerchant(srv, account)).organisation;
    await newWebhook(srv, account, orgId);
    const t = tracker(srv, orgId);
    const base = unique('jane');
    const people = [
      { email: `${base}@example.com`, phone: '+44 20 7946 0001', devices: [newVisitor(), newVisitor()] as Visitor[], ua: 'Firefox/128 (jane)' },
      { email: `${base}1@example.com`, phone: '+44 20 7946 0002', devices: [newVisitor(), newVisitor()] as Visitor[], ua: 'Firefox/128 (joan)' },
    ];
    for (const p of people) {
      const corex = unique('cx');
      const headers = { 'user-agent': p.ua };
      await t.event(p.devices[0]!, 'view', { page: `https://${domain}/` }, corex, headers);
      await t.event(p.devices[1]!, 'productview', { product_id: 7, price: 10, product_url: `https://${domain}/p/7` }, corex, headers);
      await t.identify(p.devices[0]!, { email: p.email, name: 'Jane' }, headers);
      await t.identify(p.devices[1]!, { phone: p.phone }, headers);
      await t.event(p.devices[1]!, 'updatecart', { product_id: 7, cart_url: `https://${domain}/cart` }, null, headers);
    }
    const [jane, joan] = people as [(typeof people)[0], (typeof people)[0]];
    const api = privacyApi(srv, account, orgId);
    const byEmail = await api.run({ type: 'export', subject: { email: jane.email } });
    expect(byEmail.status, JSON.stringify(byEmail)).to.equal('done');
    const doc = byEmail.result!;
    expect(doc).to.include({ org_id: orgId, subject_type: 'email', found: true });
    expect(doc.contacts.map((c) => `${c.type}:${c.value}`).sort()).to.deep.equal([`EMAIL:${jane.email}`, 'PHONE:+442079460001']);
    expect(doc.visitors.map((v) => v.core_id).sort()).to.deep.equal(jane.devices.map((d) => d.core).sort());
    for (const v of doc.visitors) {
      expect(v.user_agent).to.equal(jane.ua);
      expect(v).to.have.keys(['core_id', 'roaming_id', 'corex_id', 'name', 'first_seen', 'last_seen', 'user_agent', 'location']);
    }
    expect(doc.visitors.find((v) => v.core_id === jane.devices[0]!.core)!.name).to.equal('Jane');
    // every event with its body, oldest first
    expect(doc.events.map((e) => e.name)).to.deep.equal(['view', 'productview', 'updatecart']);
    expect(doc.events[1]!.body).to.deep.equal({ product_id: 7, price: 10, product_url: `https://${domain}/p/7` });
    // the notifications about her: a match per contact, the cart exported to both contacts
    const kinds = doc.notifications.map((n) => `${n.kind}:${(n.payload as { contact: string }).contact}`).sort();
    expect(kinds).to.deep.equal([`event:${jane.email}`, 'event:+442079460001', `matched:${jane.email}`, 'matched:+442079460001'].sort());
    expect(doc.profile!.last_view).to.deep.equal([{ url: `https://${domain}/p/7`, at: doc.profile!.last_view[0]!.at }]);
    expect(doc.profile!.last_cart).to.include({ product_id: 7, url: `https://${domain}/cart` });
    expect(byEmail.counts).to.deep.equal({ persons: 1, visitors: 2, contacts: 2, events: 3, deliveries: 4 });

    // nothing of the other shopper, whose data is nearly the same
    const text = JSON.stringify(doc);
    for (const needle of [joan.email, '+442079460002', joan.ua, ...joan.devices.flatMap((d) => [d.core, d.roaming])]) {
      expect(text, needle).to.not.include(needle);
    }

    // the same person by another identifier: the same document
    const byDevice = await api.run({ type: 'export', subject: { core_id: jane.devices[1]!.core } });
    const same = (d: typeof doc) => ({ ...d, subject_type: undefined, generated_at: undefined });
    expect(same(byDevice.result!)).to.deep.equal(same(doc));

    // an unknown subject: an empty document
    const nobody = await api.run({ type: 'export', subject: { email: `${unique('nobody')}@example.com` } });
    expect(nobody.result).to.deep.include({ found: false, contacts: [], visitors: [], profile: null, events: [], notifications: [] });
    expect(nobody.counts).to.deep.equal({ persons: 0, visitors: 0, contacts: 0, events: 0, deliveries: 0 });

    // the list never carries results
    const list = await api.list();
    expect(list.body.items.every((x: Record<string, unknown>) => !('result' in x))).to.equal(true);
  });

  it('keeps a result until it expires (7 days), then deletes it and says when', async () => {
    const { id: orgId } = (await newMerchant(srv, account)).organisation;
    const t = tracker(srv, orgId);
    const v = newVisitor();
    await t.identify(v, { email: `${unique('kept')}@example.com` });
    const api = privacyApi(srv, account, orgId);
    const done = await api.run({ type: 'export', subject: { core_id: v.core } });
    const week = Date.parse(done.result_expires_at!) - Date.parse(done.finished_at!);
    expect(week).to.be.within(7 * 86_400_000 - 1000, 7 * 86_400_000 + 1000);
    expect(done.result!.found).to.equal(true);
    // time passes: the expiry is moved into the past, and the sweep deletes the result
    await srv.deps.db
      .updateTable('privacy_requests')
      .set({ result_expires_at: new Date(Date.now() - 1000) })
      .where('org_id', '=', orgId)
      .execute();
    await srv.privacy!.sweep();
    const after = await api.get(done.id);
    expect(after.body.result).to.equal(undefined);
    expect(after.body.result_expires_at).to.be.a('string');
    const row = await srv.deps.db
      .selectFrom('privacy_requests')
      .select(['result', 'subject_enc'])
      .where('id', '=', done.id)
      .executeTakeFirstOrThrow();
    expect(row).to.deep.equal({ result: null, subject_enc: null });
  });

  it('answers a sweep asked for during another with one that starts after the call', async () => {
    // an export result the running sweep is held on: its row locked by this test
    const exportOf = async () => {
      const { id: orgId } = (await newMerchant(srv, account)).organisation;
      const v = newVisitor();
      await tracker(srv, orgId).identify(v, { email: `${unique('swept')}@example.com` });
      const done = await privacyApi(srv, account, orgId).run({ type: 'export', subject: { core_id: v.core } });
      return { orgId, id: done.id };
    };
    const held = await exportOf();
    const mine = await exportOf();
    const expire = (r: { orgId: OrgId; id: number }) =>
      srv.deps.db
        .updateTable('privacy_requests')
        .set({ result_expires_at: new Date(Date.now() - 1000) })
        .where('org_id', '=', r.orgId)
        .where('id', '=', r.id)
        .execute();
    await expire(held);
    let asked: Promise<void> | undefined;
    await srv.deps.db.transaction().execute(async (tx) => {
      await tx.selectFrom('privacy_requests').select('id').where('org_id', '=', held.orgId).where('id', '=', held.id).forUpdate().execute();
      // a sweep (the periodic one, every 100 ms here) finds `held` expired and waits on its lock;
      // only then does `mine` expire, and a sweep is asked for. The wait is fixed (its lock is taken on a
      // Citus worker, out of this node's sight): too short a wait only lets the code before pass too
      await new Promise((r) => setTimeout(r, 300));
      await expire(mine);
      asked = srv.privacy!.sweep();
    });
    await asked;
    const row = await srv.deps.db
      .selectFrom('privacy_requests')
      .select(['result'])
      .where('org_id', '=', mine.orgId)
      .where('id', '=', mine.id)
      .executeTakeFirstOrThrow();
    // the sweep that was running when it was asked for had read the expired results before `mine` expired
    expect(row.result, 'the export result expired before the sweep was asked for').to.equal(null);
  });
});
