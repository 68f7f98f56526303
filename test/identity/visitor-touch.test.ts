// Returning visitors (src/identity/identity.repository.ts upsertVisitors): the
// visitor row is rewritten only when something changed or last_seen is older
// than VISITOR_TOUCH_SECONDS; otherwise the batch still finds the visitor's
// person (its activity lands in the profile, stitching still works).
import { expect } from 'chai';
import { sql } from 'kysely';
import { VISITOR_TOUCH_SECONDS } from '../../src/identity/visitors-upsert.repository.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

describe('tracking: returning visitors are not rewritten on every event', () => {
  let srv: TestServer;
  let account: Account;
  let org: OrgId;
  let domain: string;
  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    account = await newAccount(srv);
    const m = await newMerchant(srv, account);
    org = m.organisation.id;
    domain = m.organisation.domain;
  });
  after(() => srv.stop());

  const post = (roaming: string, core: string, name: string, body: unknown, ua = 'UA/1', corex = 'null') =>
    srv.api.post(`/jsv1/${org}/${roaming}/${core}/${corex}/event/${name}`, body, { headers: { 'user-agent': ua, 'x-forwarded-for': '81.2.69.160' } });
  const row = async (core: string) => {
    const r = await sql<{ xmin: string; last_seen: Date; user_agent: string; person_id: number; corex_id: string | null }>`
      SELECT xmin::text AS xmin, last_seen, user_agent, person_id, corex_id FROM visitors WHERE org_id = ${org} AND core_id = ${core}`.execute(
      srv.deps.db,
    );
    return r.rows[0]!;
  };
  const events = async (core: string) =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE org_id = ${org} AND core_id = ${core}`.execute(srv.deps.db)).rows[0]!.n);

  it('leaves a fresh, unchanged visitor row as it is, yet records the event and its profile', async () => {
    const core = unique('c');
    expect((await post('r1', core, 'view', { page: `https://${domain}/` })).status).to.equal(202);
    const first = await row(core);
    expect((await post('r1', core, 'view', { page: `https://${domain}/2` })).status).to.equal(202);
    expect((await row(core)).xmin, 'not rewritten').to.equal(first.xmin);
    const product = `https://${domain}/products/7`;
    expect((await post('r1', core, 'productview', { product_id: 7, price: 1, product_url: product })).status).to.equal(202);
    // a product view needs the visitor's person under its lock: the row is rewritten, unchanged (plain-batch.service.ts)
    const { xmin: _after, ...unchanged } = await row(core);
    const { xmin: _before, ...was } = first;
    expect(unchanged).to.deep.equal(was);
    expect(await events(core)).to.equal(3);
    const v = await srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, { token: account.token });
    expect(v.status, v.text).to.equal(200);
    expect(v.body.recent.last_view).to.deep.equal([product]);
  });

  it('rewrites it when something changed or last_seen is stale', async () => {
    const core = unique('c');
    expect((await post('r1', core, 'view', { page: `https://${domain}/` })).status).to.equal(202);
    const first = await row(core);
    expect((await post('r1', core, 'view', { page: `https://${domain}/` }, 'UA/2')).status).to.equal(202);
    const second = await row(core);
    expect(second.xmin).to.not.equal(first.xmin);
    expect(second.user_agent).to.equal('UA/2');
    expect((await post('r2', core, 'view', { page: `https://${domain}/` }, 'UA/2')).status).to.equal(202);
    expect((await row(core)).xmin, 'new roaming id').to.not.equal(second.xmin);
    await sql`UPDATE visitors SET last_seen = now() - make_interval(secs => ${VISITOR_TOUCH_SECONDS + 5}) WHERE org_id = ${org} AND core_id = ${core}`.execute(
      srv.deps.db,
    );
    // stale by hand, not by time: the process's memory of what it wrote (fresh-visitors.service.ts) still says
    // fresh, and would leave the touch out (test/identity/fresh-visitors.test.ts checks staleness by time)
    srv.deps.freshVisitors.forget(org);
    const stale = await row(core);
    expect((await post('r2', core, 'view', { page: `https://${domain}/` }, 'UA/2')).status).to.equal(202);
    const touched = await row(core);
    expect(touched.xmin).to.not.equal(stale.xmin);
    expect(touched.last_seen.getTime()).to.be.greaterThan(stale.last_seen.getTime());
  });

  it('always writes the visitor of an identify, so the visitor list shows it as the latest activity', async () => {
    const core = unique('c');
    expect((await post('r1', core, 'view', { page: `https://${domain}/` })).status).to.equal(202);
    const first = await row(core);
    const payload = Buffer.from(JSON.stringify({ email: `${unique('e')}@x.example` })).toString('base64url');
    const r = await srv.api.get(`/jsv1/identify/${org}/r1/${core}/${payload}`, {
      headers: { 'user-agent': 'UA/1', 'x-forwarded-for': '81.2.69.160' },
    });
    expect(r.status, r.text).to.equal(200);
    const after = await row(core);
    expect(after.xmin).to.not.equal(first.xmin);
    expect(after.last_seen.getTime()).to.be.greaterThan(first.last_seen.getTime());
  });

  it('still stitches a returning visitor that brings a corex_id', async () => {
    const a = unique('c');
    const b = unique('c');
    const corex = unique('cx');
    expect((await post('ra', a, 'view', { page: `https://${domain}/` })).status).to.equal(202);
    expect((await post('rb', b, 'view', { page: `https://${domain}/` }, 'UA/1', corex)).status).to.equal(202);
    // a comes back, unchanged but for the corex_id it now brings: rewritten and joined with b
    expect((await post('ra', a, 'view', { page: `https://${domain}/` }, 'UA/1', corex)).status).to.equal(202);
    const [ra, rb] = [await row(a), await row(b)];
    expect(ra.corex_id).to.equal(corex);
    expect(ra.person_id).to.equal(rb.person_id);
    // and once more, unchanged: not rewritten, still the same person
    expect((await post('ra', a, 'view', { page: `https://${domain}/` }, 'UA/1', corex)).status).to.equal(202);
    expect((await row(a)).xmin).to.equal(ra.xmin);
    expect((await row(a)).person_id).to.equal(rb.person_id);
  });
});
