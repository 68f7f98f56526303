// docs/design.md "Limits": failed logins are limited
// per (email, client address) and per client address (429/4290 with
// Retry-After until the window passes), never per email alone; successful
// logins are not counted. A dedicated server with LOGIN_RATE_LIMIT=3/1m and
// LOGIN_ADDRESS_RATE_LIMIT=5/1m, and one with the defaults (10 per email and
// address, 30 per address, per 15 minutes). TRUST_PROXY lets each test be its
// own client address. The attack of point 4 is test/platform/lockout.test.ts.
import { expect } from 'chai';
import { ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { PASSWORD, unique, uniqueIp } from '../support/accounts.ts';
import { expectLimited as limited } from '../support/expect.ts';

async function account(srv: TestServer): Promise<string> {
  const email = `${unique('rl')}@platform.example`;
  await ensurePlatformAccount(srv.deps, { platform: 'acme', email, password: PASSWORD, name: '' });
  return email;
}

function attempt(srv: TestServer, email: string, password: string, ip: string) {
  return srv.api.post('/v1/rest/acme/users/login', { email, password }, { headers: { 'x-forwarded-for': ip } });
}

const expectLimited = (r: Parameters<typeof limited>[0], windowSeconds: number) => limited(r, { code: 4290 }, { windowSeconds, message: 'string' });

describe('login rate limit (LOGIN_RATE_LIMIT=3/1m, LOGIN_ADDRESS_RATE_LIMIT=5/1m)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ LOGIN_RATE_LIMIT: '3/1m', LOGIN_ADDRESS_RATE_LIMIT: '5/1m', TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  it('limits failed attempts per email from one address, even with the right password afterwards; other addresses go on', async () => {
    const email = await account(srv);
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) expect((await attempt(srv, email, 'wrong', ip)).status).to.equal(401);
    expectLimited(await attempt(srv, email, 'wrong', ip), 60);
    expectLimited(await attempt(srv, email, PASSWORD, ip), 60);
    // failures from one address never lock the account out elsewhere
    expect((await attempt(srv, email, PASSWORD, uniqueIp())).status).to.equal(200);
    // another email from a fresh IP is unaffected
    const other = await account(srv);
    expect((await attempt(srv, other, PASSWORD, uniqueIp())).status).to.equal(200);
  });

  it('limits failed attempts per IP, whatever the emails', async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 5; i++) {
      expect((await attempt(srv, `${unique('ghost')}@platform.example`, 'wrong', ip)).status).to.equal(401);
    }
    const email = await account(srv);
    expectLimited(await attempt(srv, email, PASSWORD, ip), 60);
    expect((await attempt(srv, email, PASSWORD, uniqueIp())).status).to.equal(200);
  });

  it('counts unknown emails like known ones (no difference an attacker could see)', async () => {
    const ghost = `${unique('ghost')}@platform.example`;
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) expect((await attempt(srv, ghost, 'wrong', ip)).status).to.equal(401);
    expectLimited(await attempt(srv, ghost, 'wrong', ip), 60);
  });

  it('does not count successful logins, and a success starts the email over', async () => {
    const email = await account(srv);
    const ip = uniqueIp();
    for (let i = 0; i < 6; i++) expect((await attempt(srv, email, PASSWORD, ip)).status).to.equal(200);
    // (the attempts now come from one address: failures from different addresses are counted apart)
    expect((await attempt(srv, email, 'wrong', ip)).status).to.equal(401);
    expect((await attempt(srv, email, 'wrong', ip)).status).to.equal(401);
    expect((await attempt(srv, email, PASSWORD, ip)).status).to.equal(200);
    // without the reset these would be failures 3 and 4
    expect((await attempt(srv, email, 'wrong', ip)).status).to.equal(401);
    expect((await attempt(srv, email, 'wrong', ip)).status).to.equal(401);
    expect((await attempt(srv, email, PASSWORD, ip)).status).to.equal(200);
  });

  it('limits a burst of parallel guesses too', async () => {
    const email = await account(srv);
    const ip = uniqueIp();
    const replies = await Promise.all(Array.from({ length: 8 }, () => attempt(srv, email, 'wrong', ip)));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).to.have.length(3);
    expect(statuses.filter((s) => s === 429)).to.have.length(5);
  });

  it('lets attempts through again once the window has passed', async () => {
    const email = await account(srv);
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) await attempt(srv, email, 'wrong', ip);
    expectLimited(await attempt(srv, email, PASSWORD, ip), 60);
    // move the window into the past instead of waiting a minute
    await srv.database.handle.db
      .updateTable('login_failures')
      .set({ window_start: new Date(Date.now() - 61_000) })
      .where('key', '=', `email-ip:${email}|${ip}`)
      .execute();
    expect((await attempt(srv, email, PASSWORD, ip)).status).to.equal(200);
  });

  it('keeps counters in login_failures under email-ip: and ip: keys, without the password', async () => {
    const email = await account(srv);
    const ip = uniqueIp();
    await attempt(srv, email, 'secret-guess-123', ip);
    const rows = await srv.database.handle.db
      .selectFrom('login_failures')
      .selectAll()
      .where('key', 'in', [`email-ip:${email}|${ip}`, `ip:${ip}`, `email:${email}`])
      .execute();
    expect(rows.map((r) => [r.key, r.failures]).sort()).to.deep.equal([
      [`email-ip:${email}|${ip}`, 1],
      [`ip:${ip}`, 1],
    ]);
    const all = await srv.database.handle.db.selectFrom('login_failures').select('key').execute();
    expect(all.some((r) => r.key.includes('secret-guess'))).to.equal(false);
  });
});

describe('login rate limit (defaults: 10 per email and address, 30 per address, per 15 minutes)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  it('answers the 11th failed attempt for one email from one address with 429 and a Retry-After within 15 minutes', async () => {
    const email = await account(srv);
    const ip = uniqueIp();
    for (let i = 0; i < 10; i++) expect((await attempt(srv, email, 'wrong', ip)).status).to.equal(401);
    const r = await attempt(srv, email, PASSWORD, ip);
    expectLimited(r, 900);
    expect(Number(r.headers.get('retry-after'))).to.be.above(800);
  });

  it('answers the 31st failed attempt from one address, whatever the emails, with 429', async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 30; i++) {
      expect((await attempt(srv, `${unique('spray')}@platform.example`, 'wrong', ip)).status).to.equal(401);
    }
    expectLimited(await attempt(srv, `${unique('spray')}@platform.example`, 'wrong', ip), 900);
  });
});
