// The privacy requests API (README "Privacy"): what a request answers and
// keeps (a keyed hash, the subject sealed while open, who asked), its
// validation, reads and paging, the suppression list it writes at once, and
// who may use it: platform accounts and the organisation's merchant; another
// account of the platform is refused (403), another platform's token and no
// token too (401), and nothing is written for them. The server here runs no
// privacy runner (no periodic jobs, no dispatcher): requests stay queued.
import { expect } from 'chai';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { type Account, newAccount, newMerchant, unique, uniqueIp } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { privacyApi } from './helpers.ts';
import { type OrgId, testOrgId } from '../support/org-id.ts';
import type { BodyOf, PlatformError, Reply } from '../support/client.ts';

describe('privacy: requests API', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;

  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true' }, { dispatcher: false, jobs: false });
    account = await newAccount(srv);
  });
  after(() => srv?.stop());

  const rowsOf = (orgId: OrgId) => srv.deps.db.selectFrom('privacy_requests').selectAll().where('org_id', '=', orgId).orderBy('id').execute();
  const suppressed = (orgId: OrgId) => srv.deps.db.selectFrom('privacy_suppressions').selectAll().where('org_id', '=', orgId).execute();

  it('accepts an erase with 202 and the request; keeps a keyed hash, the subject sealed, who asked', async () => {
    const { id: orgId } = (await newMerchant(srv, account)).organisation;
    const email = `${unique('jane')}@example.com`;
    const api = privacyApi(srv, account, orgId);
    const r = await api.create({ type: 'erase', subject: { email: ` ${email.toUpperCase()}` } });
    expect(r.status, r.text).to.equal(202);
    expect(r.body).to.deep.equal({
      id: r.body.id,
      type: 'erase',
      status: 'queued',
      suppress: false,
      subject_type: 'email',
      requested_by: account.userId,
      requested_via: 'api',
      created_at: r.body.created_at,
      started_at: null,
      finished_at: null,
      counts: null,
      error: null,
      result_expires_at: null,
    });
    expect(r.text).to.not.include(email);
    const [row] = await rowsOf(orgId);
    // the hash of the normalised subject, keyed for this organisation
    expect(row!.subject_hash.equals(srv.deps.subjects.hash(orgId, { type: 'email', value: email }))).to.equal(true);
    expect(row!.subject_hash.equals(srv.deps.subjects.hash(testOrgId(orgId + 1), { type: 'email', value: email }))).to.equal(false);
    expect(row!.subject_enc).to.be.a('string').and.not.include(email);
    expect(JSON.parse(srv.deps.cipher.decrypt(row!.subject_enc!))).to.deep.equal({ type: 'email', value: email });
    expect((await api.get(r.body.id)).body).to.deep.equal(r.body);
    expect(await suppressed(orgId)).to.deep.equal([]);
  });

  it('suppresses at once with suppress: true, and unsuppress (done at once) takes the subject off; the list holds hashes only', async () => {
    const { id: orgId } = (await newMerchant(srv, account)).organisation;
    const api = privacyApi(srv, account, orgId);
    const phone = '+44 (20) 7946-0958';
    expect((await srv.deps.organisations.policy(orgId))?.suppressing).to.equal(false);
    const r = await api.create({ type: 'export', subject: { phone }, suppress: true });
    expect(r.status, r.text).to.equal(202);
    expect(r.body).to.include({ type: 'export', status: 'queued', suppress: true, subject_type: 'phone' });
    const list = await suppressed(orgId);
    expect(list).to.have.length(1);
    expect(list[0]!.subject_hash.equals(srv.deps.subjects.hash(orgId, { type: 'phone', value: '+442079460958' }))).to.equal(true);
    expect(list[0]!.request_id).to.equal(r.body.id);
    // the ingest path's policy knows at once that identifies must be checked
    expect((await srv.deps.organisations.policy(orgId))?.suppressing).to.equal(true);
    const read = await api.suppressions();
    expect(read.status, read.text).to.equal(200);
    expect(read.body).to.deep.equal({ items: [{ request_id: r.body.id, subject_type: 'phone', created_at: r.body.created_at }], next_cursor: null });
    // suppressing again keeps the first entry
    await api.create({ type: 'erase', subject: { phone: '+442079460958' }, suppress: true });
    expect(await suppressed(orgId)).to.have.length(1);

    // the same phone written another way
    const u = await api.create({ type: 'unsuppress', subject: { phone: '+44 20 7946 0958' } });
    expect(u.status, u.text).to.equal(202);
    expect(u.body).to.include({ type: 'unsuppress', status: 'done', suppress: false, subject_type: 'phone', counts: null });
    expect(u.body.finished_at).to.equal(u.body.created_at);
    expect(await suppressed(orgId)).to.deep.equal([]);
    expect((await srv.deps.organisations.policy(orgId))?.suppressing).to.equal(false);
    expect((await api.suppressions()).body).to.deep.equal({ items: [], next_cursor: null });
    // an unsuppress keeps nothing of its subject but the hash
    const row = (await rowsOf(orgId)).find((x) => x.id === u.body.id)!;
    expect(row.subject_enc).to.equal(null);
    // a subject that is not on the list: done all the same
    expect((await api.create({ type: 'unsuppress', subject: { core_id: 'c-never-seen' } })).body.status).to.equal('done');
  });

  it('refuses invalid requests with 400/4000 and says where, writing nothing', async () => {
    const { id: orgId } = (await newMerchant(srv, account)).organisation;
    const api = privacyApi(srv, account, orgId);
    const cases: [unknown, string][] = [
      [{}, '/type'],
      [{ type: 'delete', subject: { email: 'a@b.co' } }, '/type'],
      [{ type: 'erase' }, '/subject'],
      [{ type: 'erase', subject: {} }, '/subject'],
      [{ type: 'erase', subject: { email: 'a@b.co', phone: '+4420794609' } }, '/subject'],
      [{ type: 'erase', subject: { email: 'not an email' } }, '/subject'],
      [{ type: 'erase', subject: { email: 'x'.repeat(250) + '@b.co' } }, '/subject'],
      [{ type: 'erase', subject: { phone: 'call me' } }, '/subject'],
      [{ type: 'erase', subject: { phone: '(((   )))' } }, '/subject/phone'],
      [{ type: 'erase', subject: { core_id: 'has spaces' } }, '/subject'],
      [{ type: 'erase', subject: { name: 'Jane' } }, '/subject'],
      [{ type: 'erase', subject: { email: 'a@b.co' }, suppress: 'yes' }, '/suppress'],
      [{ type: 'unsuppress', subject: { email: 'a@b.co' }, suppress: true }, '/suppress'],
      [{ type: 'erase', subject: { email: 'a@b.co' }, note: 'x' }, '/note'],
    ];
    for (const [body, where] of cases) {
      const r = await api.create<PlatformError>(body);
      expect(r.status, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`).to.equal(400);
      expect(r.body.code).to.equal(4000);
      const paths = r.body.errors!.map((e) => e.path);
      expect(
        paths.some((p) => p === where || p.startsWith(`${where}/`)),
        `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(r.body)}`,
      ).to.equal(true);
    }
    for (const bad of ['abc', '0', '9007199254740993']) expect((await api.get(bad)).status, bad).to.equal(400);
    expect((await api.list('?cursor=nonsense')).status).to.equal(400);
    expect(await rowsOf(orgId)).to.deep.equal([]);
  });

  it('lists newest first with cursors; an unknown id, or one of another organisation, is 404', async () => {
    const { id: orgId } = (await newMerchant(srv, account)).organisation;
    const { id: otherOrg } = (await newMerchant(srv, account)).organisation;
    const api = privacyApi(srv, account, orgId);
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await api.create({ type: 'export', subject: { core_id: `c-${i}` } })).body);
    const elsewhere = (await privacyApi(srv, account, otherOrg).create({ type: 'export', subject: { core_id: 'c-0' } })).body;
    const ids: number[] = [];
    let cursor: string | null = null;
    do {
      const page: Reply<BodyOf<'listPrivacyRequests'>> = await api.list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status, page.text).to.equal(200);
      expect(page.body.items.length).to.be.at.most(2);
      ids.push(...page.body.items.map((x) => x.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(ids).to.deep.equal(made.map((m) => m.id).reverse());
    // a cursor of one organisation's list is no cursor of another's
    const first = await api.list('?limit=1');
    const replayed = await privacyApi(srv, account, otherOrg).list(`?cursor=${first.body.next_cursor}`);
    expect(replayed.status).to.equal(400);
    for (const id of [987654321, elsewhere.id]) {
      const r = await api.get(id);
      expect(r.status, r.text).to.equal(404);
      expect(r.body).to.include({ code: 4040, message: 'Privacy request not found' });
    }
  });

  it('refuses another account (403/4030) and other credentials (401) on every privacy operation, writing nothing', async () => {
    const { id: orgId } = (await newMerchant(srv, account)).organisation;
    const own = privacyApi(srv, account, orgId);
    const mine = (await own.create({ type: 'export', subject: { email: 'jane@example.com' }, suppress: true })).body;
    const before = { requests: await rowsOf(orgId), suppressed: await suppressed(orgId) };
    const neighbour = await newAccount(srv);
    const foreign = await newAccount(srv, 'globex');
    const attempts = (a: Pick<Account, 'platform' | 'token'>) => {
      const api = privacyApi(srv, a, orgId);
      return [
        () => api.create<PlatformError>({ type: 'erase', subject: { email: 'jane@example.com' } }),
        () => api.create<PlatformError>({ type: 'unsuppress', subject: { email: 'jane@example.com' } }),
        () => api.list<PlatformError>(),
        () => api.get<PlatformError>(mine.id),
        () => api.suppressions<PlatformError>(),
      ];
    };
    for (const call of attempts(neighbour)) {
      const r = await call();
      expect(r.status, r.text).to.equal(403);
      expect(r.body.code).to.equal(4030);
      expect(r.text).to.not.include('jane');
    }
    // the organisation exists or not: the same answer
    for (const call of attempts({ ...neighbour }).slice(0, 1)) expect((await call()).status).to.equal(403);
    expect((await privacyApi(srv, neighbour, 987654321).create({ type: 'erase', subject: { core_id: 'x' } })).status).to.equal(403);
    // another platform's token under this platform's path, and no token at all
    for (const call of [...attempts({ platform: 'acme', token: foreign.token }), ...attempts({ platform: 'acme', token: '' })]) {
      const r = await call();
      expect(r.status, r.text).to.equal(401);
    }
    // under its own platform's path it is not a member either
    for (const call of attempts({ platform: 'globex', token: foreign.token })) expect((await call()).status).to.equal(403);
    expect({ requests: await rowsOf(orgId), suppressed: await suppressed(orgId) }).to.deep.equal(before);
  });

  it('lets the organisation’s own merchant (a merchant session) use them, and only on its own organisation', async () => {
    const body = registration();
    expect((await register(srv, body)).status).to.equal(200);
    const login = await srv.api.post<BodyOf<'loginPlatformUser'>>(
      '/v1/rest/merchant/users/login',
      { email: body.email, password: body.password },
      { headers: { 'x-forwarded-for': uniqueIp() } },
    );
    expect(login.status, login.text).to.equal(200);
    const merchant = { platform: 'merchant', token: login.body.bearer_token };
    const orgs = await srv.api.get<BodyOf<'listOrganisations'>>('/v1/rest/merchant/organisations', { token: merchant.token });
    const orgId = orgs.body.items[0]!.id;
    const api = privacyApi(srv, merchant, orgId);
    const r = await api.create({ type: 'erase', subject: { email: 'customer@example.com' }, suppress: true });
    expect(r.status, r.text).to.equal(202);
    expect(r.body.requested_by).to.equal(login.body.user.id);
    expect((await api.get(r.body.id)).status).to.equal(200);
    expect((await api.list()).body.items).to.have.length(1);
    expect((await api.suppressions()).body.items).to.have.length(1);
    // a platform's organisation is not the merchant's
    const { id: platformOrg } = (await newMerchant(srv, account)).organisation;
    const theirs = privacyApi(srv, merchant, platformOrg);
    expect((await theirs.create({ type: 'export', subject: { core_id: 'x' } })).status).to.equal(403);
    expect((await theirs.list()).status).to.equal(403);
  });
});
