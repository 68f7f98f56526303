// docs/design.md's organisation reads for the dashboard: GET .../organisations
// (newest first, cursor-paginated, `q` on the domain) and .../organisations/{org_id},
// limited to the organisations assigned to the caller.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import type { BodyOf, PlatformError, Reply } from '../support/client.ts';

const MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$/;

describe('organisation reads', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  const list = <T = BodyOf<'listOrganisations'>>(a: Account, query = '') =>
    srv.api.get<T>(`/v1/rest/${a.platform}/organisations${query}`, { token: a.token });

  // the trust and privacy settings are part of OrganisationDetail: their defaults, and the organisation's own secret
  const trustDefaults = (domain: string, body: { identity_secret?: unknown }) => ({
    identity_verification: 'optional',
    allowed_domains: [domain],
    enforce_origin: false,
    export_unverified: true,
    identity_secret: body.identity_secret,
    honor_gpc: true,
    filter_bots: true,
    visitor_retention_days: null,
  });

  it('GET /organisations/{org_id} answers the OrganisationDetail: every Organisation field plus organisation_name', async () => {
    const a = await newAccount(srv);
    const m = await newMerchant(srv, a, { organisation_name: "Jane's Linen Shop" });
    const r = await srv.api.get<BodyOf<'getOrganisation'>>(`/v1/rest/acme/organisations/${m.organisation.id}`, { token: a.token });
    expect(r.status).to.equal(200);
    expect(r.body.identity_secret).to.match(/^[0-9a-f]{64}$/);
    expect(r.body).to.deep.equal({ ...m.organisation, organisation_name: "Jane's Linen Shop", ...trustDefaults(m.organisation.domain, r.body) });
    expect(r.body.created_at).to.match(MICROS);
  });

  it('GET /organisations/{org_id} answers 403/4030 for an organisation not assigned to the caller, existing or not', async () => {
    const a = await newAccount(srv);
    const b = await newAccount(srv);
    const theirs = (await newMerchant(srv, b)).organisation.id;
    for (const id of [theirs, 987654321, 9007199254740991]) {
      const r = await srv.api.get<PlatformError>(`/v1/rest/acme/organisations/${id}`, { token: a.token });
      expect(r.status, String(id)).to.equal(403);
      expect(r.body.code).to.equal(4030);
    }
    // not an id (ResourceId stops at 2^53 - 1): a validation error, never a database error
    for (const id of ['abc', '9007199254740993', '99999999999999999999']) {
      const bad = await srv.api.get(`/v1/rest/acme/organisations/${id}`, { token: a.token });
      expect(bad.status, id).to.equal(400);
    }
  });

  it("lists only the caller's organisations, newest first, as {items, next_cursor}", async () => {
    const a = await newAccount(srv);
    const b = await newAccount(srv);
    const mine = [];
    for (let k = 0; k < 3; k++) mine.push((await newMerchant(srv, a, { organisation_name: `Shop ${k}` })).organisation);
    await newMerchant(srv, b);
    const r = await list(a);
    expect(r.status).to.equal(200);
    expect(Object.keys(r.body).sort()).to.deep.equal(['items', 'next_cursor']);
    expect(r.body.items.map((o) => o.id)).to.deep.equal(mine.map((o) => o.id).reverse());
    expect(r.body.items[0]).to.deep.equal({ ...mine[2], organisation_name: 'Shop 2', ...trustDefaults(mine[2]!.domain, r.body.items[0]!) });
    expect(r.body.next_cursor).to.equal(null);
  });

  it('lists an account without organisations as empty', async () => {
    const a = await newAccount(srv);
    const r = await list(a);
    expect(r.body).to.deep.equal({ items: [], next_cursor: null });
  });

  it('pages with an opaque cursor and the limit', async () => {
    const a = await newAccount(srv);
    const ids: number[] = [];
    for (let k = 0; k < 5; k++) ids.push((await newMerchant(srv, a)).organisation.id);
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const r: Reply<BodyOf<'listOrganisations'>> = await list(a, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).to.equal(200);
      seen.push(...r.body.items.map((o) => o.id));
      cursor = r.body.next_cursor;
      if (cursor) expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
    } while (cursor);
    expect(seen).to.deep.equal([...ids].reverse());
    const bad = await list<PlatformError>(a, '?cursor=not-a-cursor');
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.equal(4000);
    const over = await list(a, '?limit=201');
    expect(over.status).to.equal(400);
  });

  it('filters on the domain with q, case-insensitively, as a plain substring', async () => {
    const a = await newAccount(srv);
    const n = unique('q');
    const shoes = (await newMerchant(srv, a, { email: `${n}-1@m.example`, domain: `Shoes-${n}.example.com` })).organisation.id;
    const hats = (await newMerchant(srv, a, { email: `${n}-2@m.example`, domain: `hats-${n}.example.com` })).organisation.id;
    const pct = (await newMerchant(srv, a, { email: `${n}-3@m.example`, domain: `100%_off-${n}.example.com` })).organisation.id;
    const ids = async (q: string) => (await list(a, `?q=${encodeURIComponent(q)}`)).body.items.map((o) => o.id);
    expect(await ids(`SHOES-${n}`)).to.deep.equal([shoes]);
    expect(await ids(n)).to.deep.equal([pct, hats, shoes]);
    expect(await ids('%')).to.deep.equal([pct]);
    expect(await ids('_')).to.deep.equal([pct]);
    expect(await ids('0%_o')).to.deep.equal([pct]);
    expect(await ids('\\')).to.deep.equal([]);
    expect(await ids(`hats-${n}.example.com.nope`)).to.deep.equal([]);
    // a cursor belongs to its filter
    const page = await list(a, `?q=${n}&limit=1`);
    const other = await list(a, `?q=hats&cursor=${page.body.next_cursor}`);
    expect(other.status).to.equal(400);
  });

  it('does not list organisations of another account of the same platform', async () => {
    const a = await newAccount(srv);
    const b = await newAccount(srv);
    const theirs = (await newMerchant(srv, b)).organisation;
    const r = await list(a, `?q=${encodeURIComponent(theirs.domain)}`);
    expect(r.body.items).to.deep.equal([]);
  });
});
