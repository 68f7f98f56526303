// Password change for everyone (issue 22, point 4). As reported, a merchant
// could not change their password, so a merchant's stolen session could not
// be revoked (and no one could change a password through the API). Now
// POST /v1/rest/{platform_name}/users/password, with the session, for
// platform accounts and self-registered merchants: older tokens stop working,
// the answer's token keeps the caller signed in, and a wrong current password
// counts as a failed login. Every answer is checked against the contract.
import { expect } from 'chai';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, PASSWORD, newAccount, uniqueIp } from '../support/accounts.ts';
import type { BodyOf } from '../support/client.ts';

describe('password change for everyone (issue 22, point 4)', function () {
  this.timeout(60_000);
  let srv: TestServer;

  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true', REGISTRATION_TOKEN, LOGIN_RATE_LIMIT: '3/15m' });
  });
  after(() => srv.stop());

  const login = (platform: string, email: string, password: string, ip = uniqueIp()) =>
    srv.api.post<BodyOf<'loginPlatformUser'>>(`/v1/rest/${platform}/users/login`, { email, password }, { headers: { 'x-forwarded-for': ip } });
  const change = (platform: string, token: string, current: string, next: string, ip = uniqueIp()) =>
    srv.api.post<BodyOf<'changePassword'>>(
      `/v1/rest/${platform}/users/password`,
      { current_password: current, new_password: next },
      { token, headers: { 'x-forwarded-for': ip } },
    );
  const organisations = (platform: string, token: string) => srv.api.get(`/v1/rest/${platform}/organisations`, { token });

  it('changes a platform account’s password: every older session ends, the answer’s token keeps the caller signed in', async () => {
    const account: Account = await newAccount(srv);
    const other = (await login('acme', account.email, PASSWORD)).body.bearer_token; // a second session (a stolen one)
    const r = await change('acme', account.token, PASSWORD, 'a longer passphrase for 2026');
    expect(r.status, r.text).to.equal(200);
    expect(r.body).to.include({ code: 2001, message: 'Password changed' });
    expect(r.body.user).to.include({ id: account.userId, email: account.email });
    const fresh = r.body.bearer_token;
    expect(fresh).to.not.equal(account.token);

    for (const old of [account.token, other]) {
      const denied = await organisations('acme', old);
      expect(denied.status).to.equal(401);
      expect(denied.body).to.include({ code: 4010, message: 'The bearer token was revoked by a password change; log in again' });
    }
    expect((await organisations('acme', fresh)).status).to.equal(200);
    expect((await login('acme', account.email, PASSWORD)).status).to.equal(401);
    expect((await login('acme', account.email, 'a longer passphrase for 2026')).status).to.equal(200);
  });

  it('changes a self-registered merchant’s password the same way (merchant session), which ends a stolen merchant session', async () => {
    const body = registration();
    expect((await register(srv, body)).status).to.equal(200);
    const mine = (await login('merchant', body.email, body.password)).body.bearer_token;
    const stolen = (await login('merchant', body.email, body.password)).body.bearer_token;
    expect((await organisations('merchant', stolen)).status).to.equal(200);

    const r = await change('merchant', mine, body.password, 'bread at dawn, 2026');
    expect(r.status, r.text).to.equal(200);
    expect(r.body.user).to.include({ email: body.email });
    expect((await organisations('merchant', stolen)).status, 'the stolen session ends').to.equal(401);
    expect((await organisations('merchant', mine)).status).to.equal(401);
    expect((await organisations('merchant', r.body.bearer_token)).status).to.equal(200);
    // the thief cannot change it back with the old session either
    expect((await change('merchant', stolen, 'bread at dawn, 2026', 'thief wins now')).status).to.equal(401);
    expect((await login('merchant', body.email, 'bread at dawn, 2026')).status).to.equal(200);
    // a merchant session is a merchant session: not a platform's
    expect((await change('acme', r.body.bearer_token, 'bread at dawn, 2026', 'whatever 12345')).body).to.include({ code: 4010 });
  });

  it('answers a wrong current password with 401/4011, counts it as a failed login, and limits it like login', async () => {
    const account = await newAccount(srv);
    const ip = '203.0.113.50';
    for (let i = 0; i < 3; i++) {
      const r = await change('acme', account.token, `not the password ${i}`, 'whatever new 123', ip);
      expect(r.status, r.text).to.equal(401);
      expect(r.body).to.include({ code: 4011, message: 'The current password is wrong.' });
    }
    // the fourth guess from that address is refused before any check, for login as well (one count)
    const limited = await change('acme', account.token, PASSWORD, 'whatever new 123', ip);
    expect(limited.status).to.equal(429);
    expect(limited.body).to.include({ code: 4290 });
    expect(limited.headers.get('retry-after')).to.match(/^\d+$/);
    expect((await login('acme', account.email, PASSWORD, ip)).status).to.equal(429);
    // the session was not revoked by the guesses, the password did not change, and another address is not locked out
    expect((await organisations('acme', account.token)).status).to.equal(200);
    expect((await login('acme', account.email, PASSWORD, '203.0.113.51')).status).to.equal(200);
    const rows = await srv.deps.db.selectFrom('login_failures').select(['key', 'failures']).where('key', 'like', `%${ip}`).execute();
    // 3 wrong passwords, then the refused change and the refused login (counted before they are checked, as every attempt)
    expect(rows.map((r) => [r.key.split(':')[0], r.failures]).sort()).to.deep.equal([
      ['email-ip', 5],
      ['ip', 5],
    ]);
  });

  it('refuses bad input with 400/4000 and a missing or foreign token with 401/4010, changing nothing', async () => {
    const account = await newAccount(srv);
    const bodies: unknown[] = [
      { current_password: PASSWORD, new_password: 'short' },
      { current_password: PASSWORD, new_password: 'x'.repeat(1025) },
      { current_password: '', new_password: 'long enough 123' },
      { current_password: 'x'.repeat(1025), new_password: 'long enough 123' },
      { current_password: PASSWORD },
      { new_password: 'long enough 123' },
      { current_password: PASSWORD, new_password: 'long enough 123', extra: 1 },
      { current_password: PASSWORD, new_password: 12345678 },
      [],
    ];
    for (const body of bodies) {
      const r = await srv.api.post('/v1/rest/acme/users/password', body, { token: account.token });
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body).to.include({ code: 4000 });
    }
    expect((await srv.api.post('/v1/rest/acme/users/password', { current_password: PASSWORD, new_password: 'long enough 123' })).body).to.include({
      code: 4010,
    });
    const foreign = await newAccount(srv, 'globex');
    expect((await change('acme', foreign.token, PASSWORD, 'long enough 123')).body).to.include({ code: 4010 });
    expect((await organisations('acme', account.token)).status, 'nothing changed').to.equal(200);
    expect((await login('acme', account.email, PASSWORD)).status).to.equal(200);
  });

  it('lets one of two simultaneous changes from the same password win; the other is refused and changes nothing', async () => {
    const account = await newAccount(srv);
    const [a, b] = await Promise.all([
      change('acme', account.token, PASSWORD, 'first new passphrase'),
      change('acme', account.token, PASSWORD, 'second new passphrase'),
    ]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).to.deep.equal([200, 401]);
    const won = a.status === 200 ? 'first new passphrase' : 'second new passphrase';
    const lost = a.status === 200 ? 'second new passphrase' : 'first new passphrase';
    expect((await login('acme', account.email, won)).status).to.equal(200);
    expect((await login('acme', account.email, lost)).status).to.equal(401);
  });
});
