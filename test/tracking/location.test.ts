import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

describe('tracking: location from the client IP', () => {
  let srv: TestServer;
  let account: Account;
  let org: OrgId;
  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    account = await newAccount(srv);
    org = (await newMerchant(srv, account)).organisation.id;
  });
  after(() => srv.stop());

  async function locate(ip: string | undefined) {
    const core = unique('c');
    const headers = ip ? { 'x-forwarded-for': ip } : undefined;
    const r = await srv.api.post(`/jsv1/${org}/r1/${core}/null/event/view`, { page: 'https://s.example/' }, { headers });
    expect(r.status).to.equal(202);
    const v = await srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, { token: account.token });
    return v.body.location;
  }

  it('locates a public IPv4 address (behind a trusted proxy)', async () => {
    const loc = await locate('193.0.6.139');
    expect(loc).to.include({ country_code: 'NL', timezone: 'Europe/Amsterdam' });
    expect(loc!.latitude).to.be.a('number');
    expect(loc!.longitude).to.be.a('number');
  });

  it('locates a public IPv6 address', async () => {
    expect(await locate('2001:200::1')).to.include({ country_code: 'JP', timezone: 'Asia/Tokyo' });
  });

  it('gives no location (not an error) for loopback and private addresses', async () => {
    expect(await locate(undefined)).to.equal(null); // the test client is 127.0.0.1
    expect(await locate('10.1.2.3')).to.equal(null);
  });

  it('keeps the last known location when a later call comes from a private address', async () => {
    const core = unique('c');
    const path = `/jsv1/${org}/r1/${core}/null/event/view`;
    await srv.api.post(path, { page: 'https://s.example/' }, { headers: { 'x-forwarded-for': '193.0.6.139' } });
    await srv.api.post(path, { page: 'https://s.example/' }, { headers: { 'x-forwarded-for': '192.168.1.9' } });
    const v = await srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, { token: account.token });
    expect(v.body.location!.country_code).to.equal('NL');
  });

  it('trusts only the entry its own proxy appended to X-Forwarded-For', async () => {
    // the client claims a Dutch address; the proxy saw it come from a private one
    expect(await locate('193.0.6.139, 10.0.0.7')).to.equal(null);
  });
});
