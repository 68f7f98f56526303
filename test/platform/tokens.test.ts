// Issue 12 point 6, tokens: "a stolen bearer token cannot be revoked (no
// password change, tokens outlive everything; a token without `exp` signed
// with the key is accepted)". Now a token needs `exp`, and a password change
// revokes every token issued before it (session version, claim `sv`), also
// one issued in the same second, while a login right after the change works.
// The CLI command is tested as a child process in test/foundation/cli.test.ts.
import { SignJWT } from 'jose';
import { expect } from 'chai';
import { AccountError, ensurePlatformAccount, setPlatformPassword } from '../../src/platform/accounts.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { PASSWORD, unique, uniqueIp } from '../support/accounts.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';

const JWT_SECRET = 'tokens-test-secret-0123456789abcdefghijklmnop';
const key = new TextEncoder().encode(JWT_SECRET);

describe('bearer tokens: exp required, revoked by a password change', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ JWT_SECRET, TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  async function account(): Promise<{ email: string; userId: number }> {
    const email = `${unique('tok')}@platform.example`;
    const made = await ensurePlatformAccount(srv.deps, { platform: 'acme', email, password: PASSWORD, name: '' });
    return { email, userId: made.userId };
  }
  const login = (email: string, password: string) =>
    srv.api.post<BodyOf<'loginPlatformUser'>>('/v1/rest/acme/users/login', { email, password }, { headers: { 'x-forwarded-for': uniqueIp() } });
  const read = (token: string) => srv.api.get<PlatformError>('/v1/rest/acme/organisations', { token });

  function expect4010(r: { status: number; body: { code: number }; headers: Headers }) {
    expect(r.status).to.equal(401);
    expect(r.body.code).to.equal(4010);
    expect(r.headers.get('www-authenticate')).to.equal('Bearer');
  }

  it('refuses a token without exp signed with the right key (401/4010); the same claims with exp work', async () => {
    const { userId } = await account();
    const now = Math.floor(Date.now() / 1000);
    const claims = { sv: 0 };
    const base = () =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer('trackway')
        .setAudience('acme')
        .setSubject(String(userId))
        .setIssuedAt(now);
    expect4010(await read(await base().sign(key)));
    expect(
      (
        await read(
          await base()
            .setExpirationTime(now + 600)
            .sign(key),
        )
      ).status,
    ).to.equal(200);
    // a token of an older version carries no session version: it counts as 0
    const legacy = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('trackway')
      .setAudience('acme')
      .setSubject(String(userId))
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(key);
    expect((await read(legacy)).status).to.equal(200);
    // a session version that is not a whole number ≥ 0 is refused
    for (const sv of [-1, 1.5, '0', null]) {
      expect4010(
        await read(
          await new SignJWT({ sv })
            .setProtectedHeader({ alg: 'HS256' })
            .setIssuer('trackway')
            .setAudience('acme')
            .setSubject(String(userId))
            .setExpirationTime(now + 600)
            .sign(key),
        ),
      );
    }
  });

  it('revokes every earlier token when the password changes, including one issued in the same second; a login right after works', async () => {
    const { email, userId } = await account();
    const first = (await login(email, PASSWORD)).body.bearer_token;
    const second = (await login(email, PASSWORD)).body.bearer_token;
    const now = Math.floor(Date.now() / 1000);
    const legacy = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('trackway')
      .setAudience('acme')
      .setSubject(String(userId))
      .setExpirationTime(now + 600)
      .sign(key);
    for (const t of [first, second, legacy]) expect((await read(t)).status).to.equal(200);

    const NEW = 'a brand new passphrase 2026';
    await setPlatformPassword(srv.deps, { email, password: NEW });
    for (const t of [first, second, legacy]) {
      const r = await read(t);
      expect4010(r);
      expect(r.body)
        .to.have.property('message')
        .that.matches(/revoked/);
    }
    // the old password no longer logs in; the new one does, at once (same second as the change)
    expect((await login(email, PASSWORD)).status).to.equal(401);
    const fresh = await login(email, NEW);
    expect(fresh.status, fresh.text).to.equal(200);
    expect((await read(fresh.body.bearer_token)).status).to.equal(200);
    const row = await srv.database.handle.db.selectFrom('users').select('session_version').where('id', '=', userId).executeTakeFirstOrThrow();
    expect(row.session_version).to.equal(1);

    // a second change revokes the token made after the first
    await setPlatformPassword(srv.deps, { email, password: 'and another one, 2027' });
    expect4010(await read(fresh.body.bearer_token));
  });

  it('refuses to set a password for an unknown email, a non-platform user, or a password out of 8..1024 characters', async () => {
    const { email } = await account();
    for (const [input, message] of [
      [{ email: `${unique('nobody')}@platform.example`, password: 'long enough 123' }, /no platform account/],
      [{ email, password: 'short' }, /8 to 1024/],
      [{ email, password: 'x'.repeat(1025) }, /8 to 1024/],
    ] as const) {
      let err: unknown;
      await setPlatformPassword(srv.deps, input).catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(AccountError);
      expect((err as Error).message).to.match(message);
    }
  });

  it('clears the failed-login counters of the email when the operator sets a new password', async () => {
    const { email } = await account();
    const ip = uniqueIp();
    for (let i = 0; i < 10; i++)
      await srv.api.post('/v1/rest/acme/users/login', { email, password: 'wrong' }, { headers: { 'x-forwarded-for': ip } });
    const locked = await srv.api.post('/v1/rest/acme/users/login', { email, password: PASSWORD }, { headers: { 'x-forwarded-for': ip } });
    expect(locked.status).to.equal(429);
    await setPlatformPassword(srv.deps, { email, password: 'operator reset 2026' });
    const r = await srv.api.post('/v1/rest/acme/users/login', { email, password: 'operator reset 2026' }, { headers: { 'x-forwarded-for': ip } });
    expect(r.status, r.text).to.equal(200);
  });
});
