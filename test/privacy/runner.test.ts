// The privacy runner is safe with several processes (README "Privacy"): two
// servers on one database run a burst of erase requests, each exactly once;
// a request whose runner died (its claim held, its lease running out) is
// taken over when the lease ends and finished from what the first run
// recorded, even once its subject no longer resolves; and an erasure in one
// organisation never touches the same email in another.
import { expect } from 'chai';
import { createDb } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { sealSubject } from '../../src/privacy/request-run.service.ts';
import { advance, claimNext, insertRequest } from '../../src/privacy/requests.repository.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { eventually } from '../support/wait.ts';
import { newVisitor, privacyApi, tracker } from './helpers.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

describe('privacy: the runner', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let second: RunningServer;
  let secondHandle: ReturnType<typeof createDb>;
  let account: Account;

  before(async () => {
    srv = await startTestServer({}, { dispatcher: false, privacy: { sweepMs: 100, leaseMs: 2_000 } });
    secondHandle = createDb(srv.database.url, { max: 4, onError: () => {} });
    second = await startOnDatabase(srv.config, secondHandle, createLogger('silent'), {
      dispatcher: false,
      privacy: { sweepMs: 100, leaseMs: 2_000 },
    });
    account = await newAccount(srv);
  });
  after(async () => {
    await second?.close();
    await secondHandle?.close();
    await srv?.stop();
  });

  const visitorStatus = (orgId: OrgId, core: string) =>
    srv.api.get(`/v1/rest/${account.platform}/organisations/${orgId}/visitors/${core}`, { token: account.token }).then((r) => r.status);

  it('runs each of a burst of requests exactly once with two runners on one database', async () => {
    const { id: orgId, domain } = (await newMerchant(srv, account)).organisation;
    const t = tracker(srv, orgId);
    const people = Array.from({ length: 6 }, () => ({ v: newVisitor(), email: `${unique('burst')}@example.com` }));
    for (const p of people) {
      await t.identify(p.v, { email: p.email });
      await t.event(p.v, 'view', { page: `https://${domain}/` });
    }
    const api = privacyApi(srv, account, orgId);
    const made = await Promise.all(people.map((p) => api.create({ type: 'erase', subject: { email: p.email } })));
    const done = await eventually(async () => {
      const rows = await srv.deps.db.selectFrom('privacy_requests').selectAll().where('org_id', '=', orgId).execute();
      return rows.length === 6 && rows.every((r) => r.status === 'done') ? rows : undefined;
    }, 30_000);
    expect(made.map((m) => m.status)).to.deep.equal(Array(6).fill(202));
    for (const r of done) {
      expect(r.attempts, `request ${r.id} claimed more than once`).to.equal(1);
      expect(r.counts).to.deep.equal({ persons: 1, visitors: 1, contacts: 1, events: 1, deliveries: 0 });
    }
    for (const p of people) expect(await visitorStatus(orgId, p.v.core)).to.equal(404);
  });

  it('takes over a request whose runner died when its lease ends, and finishes it with the persons the first run recorded', async () => {
    const { id: orgId, domain } = (await newMerchant(srv, account)).organisation;
    const t = tracker(srv, orgId);
    const v = newVisitor();
    const email = `${unique('dead')}@example.com`;
    await t.identify(v, { email });
    await t.event(v, 'view', { page: `https://${domain}/` });
    const person = (
      await srv.deps.db.selectFrom('visitors').select('person_id').where('org_id', '=', orgId).where('core_id', '=', v.core).executeTakeFirstOrThrow()
    ).person_id;
    // a runner queued it, claimed it, recorded its person and died (one transaction here, so that no live
    // runner can take it before the dead one has it)
    const leaseEnds = Date.now() + 1_500;
    const subject = { type: 'email' as const, value: email };
    const fence = await srv.deps.db.transaction().execute(async (tx) => {
      const made = await insertRequest(tx, {
        orgId,
        type: 'erase',
        suppress: false,
        subjectType: 'email',
        subjectHash: srv.deps.subjects.hash(orgId, subject),
        subjectEnc: sealSubject(srv.deps.cipher, subject),
        requestedBy: null,
        requestedVia: 'cli',
        at: new Date(),
        done: false,
      });
      const claim = await claimNext(tx, orgId, new Date(), new Date(leaseEnds), made.id);
      expect(claim?.attempts).to.equal(1);
      const f = { orgId, id: made.id, attempt: 1 };
      expect(await advance(tx, f, { leaseUntil: new Date(leaseEnds), personIds: [person] })).to.equal(true);
      return f;
    });
    // and the contact went meanwhile: the subject no longer resolves, the recorded person still does
    await srv.deps.db.deleteFrom('visitor_contacts').where('org_id', '=', orgId).execute();
    await srv.deps.db.deleteFrom('contacts').where('org_id', '=', orgId).execute();
    const finished = await eventually(async () => {
      const row = await srv.deps.db
        .selectFrom('privacy_requests')
        .selectAll()
        .where('org_id', '=', orgId)
        .where('id', '=', fence.id)
        .executeTakeFirstOrThrow();
      return row.status === 'done' ? row : undefined;
    }, 20_000);
    expect(Date.now()).to.be.at.least(leaseEnds);
    expect(finished.attempts).to.equal(2);
    expect(finished.counts).to.deep.equal({ persons: 1, visitors: 1, contacts: 0, events: 1, deliveries: 0 });
    expect(finished.subject_enc).to.equal(null);
    expect(finished.person_ids).to.equal(null);
    expect(await visitorStatus(orgId, v.core)).to.equal(404);
    // the dead run's late write is refused: its claim is no longer the request's
    expect(await srv.deps.db.transaction().execute((tx) => advance(tx, fence, { leaseUntil: new Date() }))).to.equal(false);
  });

  it('never touches the same email in another organisation (erase and export are scoped by organisation)', async () => {
    const email = `${unique('twin')}@example.com`;
    const orgs = [(await newMerchant(srv, account)).organisation, (await newMerchant(srv, account)).organisation];
    const visitors = orgs.map(() => newVisitor());
    for (const [i, o] of orgs.entries()) {
      await tracker(srv, o.id).identify(visitors[i]!, { email, name: 'Twin' });
      await tracker(srv, o.id).event(visitors[i]!, 'view', { page: `https://${o.domain}/` });
    }
    const [a, b] = [privacyApi(srv, account, orgs[0]!.id), privacyApi(srv, account, orgs[1]!.id)];
    const erased = await a.run({ type: 'erase', subject: { email }, suppress: true });
    expect(erased.counts).to.deep.include({ persons: 1, visitors: 1, contacts: 1 });
    expect(await visitorStatus(orgs[0]!.id, visitors[0]!.core)).to.equal(404);
    expect(await visitorStatus(orgs[1]!.id, visitors[1]!.core)).to.equal(200);
    const exported = await b.run({ type: 'export', subject: { email } });
    expect(exported.result!.visitors.map((v) => v.core_id)).to.deep.equal([visitors[1]!.core]);
    // the same email hashes differently per organisation: the other one's list is empty
    expect((await b.suppressions()).body.items).to.deep.equal([]);
    expect((await srv.deps.organisations.policy(orgs[1]!.id))?.suppressing).to.equal(false);
  });
});
