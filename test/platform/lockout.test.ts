// Issue 12 point 4: "11 wrong passwords for an email from one address, and
// the correct password from any other address gets 429 for 15 minutes;
// repeat forever." Failures now count per (email, client address) and per
// client address, never per email alone: the account's owner logs in from
// another address whatever an attacker does, and the attacker's own address
// stays limited. The defaults (10 per email and address, 30 per address, per
// 15 minutes); TRUST_PROXY lets each test choose its client addresses.
import { expect } from 'chai';
import { ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { PASSWORD, unique, uniqueIp } from '../support/accounts.ts';
import type { BodyOf } from '../support/client.ts';

describe('lockout without denial of service', function () {
  this.timeout(120_000);
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  async function account(): Promise<string> {
    const email = `${unique('owner')}@platform.example`;
    await ensurePlatformAccount(srv.deps, { platform: 'acme', email, password: PASSWORD, name: '' });
    return email;
  }
  const attempt = (email: string, password: string, ip: string) =>
    srv.api.post<BodyOf<'loginPlatformUser'>>('/v1/rest/acme/users/login', { email, password }, { headers: { 'x-forwarded-for': ip } });

  it('lets the owner log in from another address after an attacker failed 11 times (and keeps doing so), while the attacker stays limited', async () => {
    const email = await account();
    const attacker = uniqueIp();
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await attempt(email, `guess-${i}`, attacker)).status);
    expect(statuses).to.deep.equal([...Array(10).fill(401), 429]);

    // the owner, elsewhere: logged in at once (formerly 429 for 15 minutes)
    const owner = await attempt(email, PASSWORD, uniqueIp());
    expect(owner.status, owner.text).to.equal(200);
    expect(owner.body.bearer_token).to.be.a('string');

    // the attacker repeats: still refused, and even the right password is refused from that address ...
    for (let i = 0; i < 5; i++) {
      const r = await attempt(email, `again-${i}`, attacker);
      expect(r.status).to.equal(429);
      expect(r.body.code).to.equal(4290);
      expect(Number(r.headers.get('retry-after'))).to.be.within(800, 900);
    }
    expect((await attempt(email, PASSWORD, attacker)).status).to.equal(429);
    // ... while the owner goes on logging in from other addresses
    for (let i = 0; i < 3; i++) expect((await attempt(email, PASSWORD, uniqueIp())).status).to.equal(200);
  });

  it('limits an address that sprays many accounts (30 failures, whatever the emails), without locking those accounts elsewhere', async () => {
    const sprayer = uniqueIp();
    const victims = await Promise.all(Array.from({ length: 3 }, () => account()));
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await attempt(victims[i % 3]!, `guess-${i}`, sprayer)).status);
    expect(statuses.slice(0, 30).every((s) => s === 401)).to.equal(true);
    expect(statuses[30]).to.equal(429);
    for (const v of victims) expect((await attempt(v, PASSWORD, uniqueIp())).status).to.equal(200);
  });

  it('counts every address of one IPv6 /64 as one address (an attacker cannot rotate through its /64)', async () => {
    const email = await account();
    for (let i = 0; i < 10; i++) expect((await attempt(email, 'wrong', `2001:db8:77:1::${(i + 1).toString(16)}`)).status).to.equal(401);
    expect((await attempt(email, 'wrong', '2001:db8:77:1:ffff:ffff:ffff:fffe')).status).to.equal(429);
    expect((await attempt(email, PASSWORD, '2001:db8:77:2::1')).status).to.equal(200);
  });

  it('a parallel burst from one address for one email gets at most 10 answers that are not 429', async () => {
    const email = await account();
    const ip = uniqueIp();
    const replies = await Promise.all(Array.from({ length: 20 }, () => attempt(email, 'wrong', ip)));
    expect(replies.filter((r) => r.status === 401)).to.have.length(10);
    expect(replies.filter((r) => r.status === 429)).to.have.length(10);
    expect((await attempt(email, PASSWORD, uniqueIp())).status).to.equal(200);
  });
});
