// Visitor retention (README "Privacy"): the hourly maintenance erases the
// visitors not seen for the organisation's visitor_retention_days, exactly as
// an erase would: a person all of whose visitors are that old goes wholly
// (its contacts too, and receivers get contactErased), a person still seen
// on another device keeps its contacts and loses only the old visitor, recent
// visitors and organisations without a retention are untouched.
import { expect } from 'chai';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { eventually } from '../support/wait.ts';
import { newVisitor, scanDatabase, tracker, type Visitor } from './helpers.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

describe('privacy: visitor retention', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;

  before(async () => {
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true, privacy: { sweepMs: 100 } });
    account = await newAccount(srv);
  });
  after(async () => {
    await srv?.stop();
    await receiver?.close();
  });

  const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000);
  /** Time passes for a visitor: last seen (and first seen) `days` ago. */
  const age = (orgId: OrgId, v: Visitor, days: number) =>
    srv.deps.db
      .updateTable('visitors')
      .set({ first_seen: daysAgo(days + 1), last_seen: daysAgo(days) })
      .where('org_id', '=', orgId)
      .where('core_id', '=', v.core)
      .execute();
  const visitor = (orgId: OrgId, v: Visitor) =>
    srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${orgId}/visitors/${v.core}`, { token: account.token });

  it('erases only the visitors not seen for the retention, with their persons and contacts when nothing else refers to them', async () => {
    const { id: orgId, domain } = (await newMerchant(srv, account)).organisation;
    await newWebhook(srv, account, orgId, { endpoint: receiver.url });
    const patched = await srv.api.request('PATCH', `/v1/rest/${account.platform}/organisations/${orgId}`, {
      body: { visitor_retention_days: 30 },
      token: account.token,
    });
    expect(patched.status, patched.text).to.equal(200);
    const { id: keepAll } = (await newMerchant(srv, account)).organisation;
    const t = tracker(srv, orgId);
    const gone = { v: newVisitor(), email: `${unique('gone')}@example.com` };
    const mixed = { old: newVisitor(), recent: newVisitor(), email: `${unique('mixed')}@example.com` };
    const fresh = { v: newVisitor(), email: `${unique('fresh')}@example.com` };
    await t.identify(gone.v, { email: gone.email, name: 'Gone Person' });
    await t.event(gone.v, 'view', { page: `https://${domain}/gone` });
    const corex = unique('cx');
    await t.event(mixed.old, 'view', { page: `https://${domain}/old` }, corex);
    await t.event(mixed.recent, 'view', { page: `https://${domain}/recent` }, corex);
    await t.identify(mixed.old, { email: mixed.email });
    await t.identify(fresh.v, { email: fresh.email });
    const elsewhere = newVisitor();
    await tracker(srv, keepAll).identify(elsewhere, { email: `${unique('kept')}@example.com` });
    await age(orgId, gone.v, 31);
    await age(orgId, mixed.old, 45);
    await age(orgId, fresh.v, 29);
    await age(keepAll, elsewhere, 400);
    // the matches have been delivered: retention's notices come after them
    await eventually(() => (receiver.requests.length >= 3 ? true : undefined), 20_000, 'the matches');

    await srv.privacy!.retain();

    expect((await visitor(orgId, gone.v)).status).to.equal(404);
    expect((await visitor(orgId, mixed.old)).status).to.equal(404);
    const kept = await visitor(orgId, mixed.recent);
    expect(kept.status).to.equal(200);
    // still seen on another device: the person keeps its contact
    expect(kept.body.contacts.map((c: { value: string }) => c.value)).to.deep.equal([mixed.email]);
    expect((await visitor(orgId, fresh.v)).status).to.equal(200);
    expect((await visitor(keepAll, elsewhere)).status).to.equal(200);
    const events = await srv.deps.db.selectFrom('events').select('core_id').where('org_id', '=', orgId).execute();
    expect(events.map((e) => e.core_id)).to.deep.equal([mixed.recent.core]);

    // the receivers hear of the contact that went, and only of it
    const notices = await eventually(() => {
      const got = receiver.requests.map((r) => JSON.parse(r.body)).filter((b) => b.medium === 'erased');
      return got.length > 0 ? got : undefined;
    }, 20_000);
    expect(notices).to.deep.equal([{ medium: 'erased', contact: gone.email, type: 'EMAIL', org_id: String(orgId), date: notices[0].date }]);
    // and then nothing holds the erased person's email or name (the notice redacted once delivered)
    await eventually(async () => ((await scanDatabase(srv.deps.db, [gone.email, 'Gone Person'])).length === 0 ? true : undefined), 20_000);
    // a second run finds nothing more to do
    await srv.privacy!.retain();
    expect((await visitor(orgId, mixed.recent)).status).to.equal(200);
    expect((await visitor(orgId, fresh.v)).status).to.equal(200);
  });
});
