// loginPlatformUser, bearer authentication, error 4011, and docs/design.md's
// "a platform account belongs to one platform" and token rules.
import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { AccountError, ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, PASSWORD, unique, uniqueIp } from '../support/accounts.ts';
import { errorBody, type BodyOf, type PlatformError } from '../support/client.ts';

const JWT_SECRET = 'login-test-secret-0123456789abcdefghijklmnopqrstuvwxyz';

const USER_KEYS = ['id', 'name', 'email', 'username', 'is_active', 'phone', 'is_email_verified', 'is_phone_verified', 'is_superuser'];

function b64url(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64url');
}

describe('platform login (loginPlatformUser) and bearer tokens', () => {
  let srv: TestServer;
  let acme: Account;

  before(async () => {
    // login at the production password-hash cost (the harness uses 2^14 elsewhere)
    srv = await startTestServer({ JWT_SECRET, TRUST_PROXY: 'true', PASSWORD_HASH_COST: '17' });
    acme = await newAccount(srv, 'acme');
  });
  after(() => srv.stop());

  const login = (platform: string, email: string, password: string) =>
    srv.api.post<BodyOf<'loginPlatformUser'>>(
      `/v1/rest/${platform}/users/login`,
      { email, password },
      { headers: { 'x-forwarded-for': uniqueIp() } },
    );

  describe('login', () => {
    it('answers 200 with bearer_token, the User, code 2001 and message OK', async () => {
      const email = `${unique('login')}@platform.example`;
      const made = await ensurePlatformAccount(srv.deps, { platform: 'acme', email, password: PASSWORD, name: 'Acme Ops' });
      const r = await login('acme', email, PASSWORD);
      expect(r.status).to.equal(200);
      expect(Object.keys(r.body).sort()).to.deep.equal(['bearer_token', 'code', 'message', 'user']);
      expect(r.body.code).to.equal(2001);
      expect(r.body.message).to.equal('OK');
      expect(r.body.bearer_token).to.match(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(Object.keys(r.body.user).sort()).to.deep.equal([...USER_KEYS].sort());
      expect(r.body.user).to.deep.equal({
        id: made.userId,
        name: 'Acme Ops',
        email,
        username: email,
        is_active: true,
        phone: '',
        is_email_verified: false,
        is_phone_verified: false,
        is_superuser: false,
      });
    });

    it('needs no Authorization header, and ignores a bad one', async () => {
      const r = await srv.api.post<BodyOf<'loginPlatformUser'>>(
        `/v1/rest/acme/users/login`,
        { email: acme.email, password: PASSWORD },
        { headers: { authorization: 'Bearer nonsense', 'x-forwarded-for': uniqueIp() } },
      );
      expect(r.status).to.equal(200);
    });

    it('treats the email case-insensitively', async () => {
      const r = await login('acme', `  ${acme.email.toUpperCase()} `, PASSWORD);
      expect(r.status).to.equal(200);
      expect(r.body.user.id).to.equal(acme.userId);
    });

    it('issues a token that works on the platform API (HS256, iss trackway, aud = platform, sub = user id, exp)', async () => {
      const r = await login('acme', acme.email, PASSWORD);
      const [header, payload] = r.body.bearer_token
        .split('.')
        .slice(0, 2)
        .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
      expect(header.alg).to.equal('HS256');
      expect(payload).to.include({ iss: 'trackway', aud: 'acme', sub: String(acme.userId) });
      expect(payload.exp - payload.iat).to.equal(24 * 3600);
      const list = await srv.api.get('/v1/rest/acme/organisations', { token: r.body.bearer_token });
      expect(list.status).to.equal(200);
    });

    const invalid = { code: 4011, message: 'Invalid login credentials.' };

    it('answers a wrong password with 401/4011 "Invalid login credentials."', async () => {
      const r = await login('acme', acme.email, 'wrong password');
      expect(r.status).to.equal(401);
      expect(errorBody(r)).to.deep.equal(invalid);
    });

    it('answers an unknown email exactly like a wrong password', async () => {
      const wrong = await login('acme', acme.email, 'wrong password');
      const unknown = await login('acme', `${unique('nobody')}@platform.example`, 'wrong password');
      expect(unknown.status).to.equal(wrong.status);
      expect(errorBody(unknown)).to.deep.equal(errorBody(wrong));
      expect(unknown.headers.get('www-authenticate')).to.equal(wrong.headers.get('www-authenticate'));
    });

    it('refuses the right password under another or an unknown platform_name (4011)', async () => {
      const other = await login('globex', acme.email, PASSWORD);
      expect(other.status).to.equal(401);
      expect(errorBody(other)).to.deep.equal(invalid);
      const reserved = await login('integration', acme.email, PASSWORD);
      expect(reserved.status).to.equal(401);
      expect(errorBody(reserved)).to.deep.equal(invalid);
    });

    it('refuses registered client users, who have no password (4011)', async () => {
      const m = await newMerchant(srv, acme);
      for (const password of ['x', PASSWORD]) {
        const r = await login('acme', m.user.email, password);
        expect(r.status).to.equal(401);
        expect(errorBody(r)).to.deep.equal(invalid);
      }
    });

    it('refuses a deactivated account (4011)', async () => {
      const a = await newAccount(srv, 'acme');
      await srv.database.handle.db.updateTable('users').set({ is_active: false }).where('id', '=', a.userId).execute();
      const r = await login('acme', a.email, PASSWORD);
      expect(r.status).to.equal(401);
      expect(errorBody(r)).to.deep.equal(invalid);
    });

    it('validates the body: 400/4000 with errors', async () => {
      for (const body of [
        {},
        { email: acme.email },
        { email: '', password: 'x' },
        { email: acme.email, password: PASSWORD, extra: 1 },
        { email: 1, password: 2 },
      ]) {
        const r = await srv.api.post<PlatformError>('/v1/rest/acme/users/login', body, { headers: { 'x-forwarded-for': uniqueIp() } });
        expect(r.status, JSON.stringify(body)).to.equal(400);
        expect(r.body.code).to.equal(4000);
        expect(r.body.errors).to.be.an('array').that.is.not.empty;
      }
    });

    it('a platform may not be named "integration" (it names the unscoped path)', async () => {
      let err: unknown;
      try {
        await ensurePlatformAccount(srv.deps, { platform: 'integration', email: `${unique('i')}@x.example`, password: PASSWORD, name: '' });
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(AccountError);
    });
  });

  describe('bearer tokens (401/4010)', () => {
    const path = '/v1/rest/acme/organisations';

    async function expect4010(headers: Record<string, string>, p = path) {
      const r = await srv.api.get<PlatformError>(p, { headers });
      expect(r.status, JSON.stringify(headers)).to.equal(401);
      expect(r.body.code).to.equal(4010);
      expect(r.headers.get('www-authenticate')).to.equal('Bearer');
    }

    it('accepts a valid token', async () => {
      const r = await srv.api.get(path, { token: acme.token });
      expect(r.status).to.equal(200);
    });

    it('refuses a missing Authorization header', async () => {
      await expect4010({});
    });

    it('refuses malformed headers and tokens', async () => {
      for (const authorization of [
        'Bearer',
        'Bearer ',
        'Basic dXNlcjpwYXNz',
        `Token ${acme.token}`,
        'Bearer not-a-jwt',
        'Bearer a.b',
        `Bearer ${acme.token}x`,
        `Bearer ${acme.token.slice(0, -3)}`,
      ]) {
        await expect4010({ authorization });
      }
    });

    it('refuses an expired token signed with the real secret', async () => {
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer('trackway')
        .setAudience('acme')
        .setSubject(String(acme.userId))
        .setIssuedAt(now - 7200)
        .setExpirationTime(now - 3600)
        .sign(new TextEncoder().encode(JWT_SECRET));
      await expect4010({ authorization: `Bearer ${token}` });
    });

    it('refuses a token signed with another secret (forged signature)', async () => {
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer('trackway')
        .setAudience('acme')
        .setSubject(String(acme.userId))
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode('not-the-secret-0123456789abcdefghijklmnopqrstuvwxyz'));
      await expect4010({ authorization: `Bearer ${token}` });
      // the real token's claims with a re-computed signature under a guessed key
      const [h, p] = acme.token.split('.');
      const sig = createHmac('sha256', 'guess').update(`${h}.${p}`).digest('base64url');
      await expect4010({ authorization: `Bearer ${h}.${p}.${sig}` });
    });

    it('refuses alg "none" tokens', async () => {
      const payload = b64url(JSON.stringify({ iss: 'trackway', aud: 'acme', sub: String(acme.userId), exp: Math.floor(Date.now() / 1000) + 3600 }));
      for (const alg of ['none', 'None', 'NONE']) {
        const header = b64url(JSON.stringify({ alg, typ: 'JWT' }));
        await expect4010({ authorization: `Bearer ${header}.${payload}.` });
      }
    });

    it('refuses a token with its claims altered (another user, another platform)', async () => {
      const [h, p, s] = acme.token.split('.');
      const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
      const other = b64url(JSON.stringify({ ...claims, sub: String(Number(claims.sub) + 1) }));
      await expect4010({ authorization: `Bearer ${h}.${other}.${s}` });
      const globex = b64url(JSON.stringify({ ...claims, aud: 'globex' }));
      await expect4010({ authorization: `Bearer ${h}.${globex}.${s}` }, '/v1/rest/globex/organisations');
    });

    it('refuses a token of the right key but another issuer, or no subject', async () => {
      const key = new TextEncoder().encode(JWT_SECRET);
      const wrongIss = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('someone')
        .setAudience('acme')
        .setSubject(String(acme.userId))
        .setExpirationTime('1h')
        .sign(key);
      await expect4010({ authorization: `Bearer ${wrongIss}` });
      const noSub = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('trackway')
        .setAudience('acme')
        .setExpirationTime('1h')
        .sign(key);
      await expect4010({ authorization: `Bearer ${noSub}` });
    });

    it("refuses another platform's token on this platform's paths, and this one's on the other", async () => {
      const globex = await newAccount(srv, 'globex');
      await expect4010({ authorization: `Bearer ${globex.token}` }, '/v1/rest/acme/organisations');
      await expect4010({ authorization: `Bearer ${acme.token}` }, '/v1/rest/globex/organisations');
      const own = await srv.api.get('/v1/rest/globex/organisations', { token: globex.token });
      expect(own.status).to.equal(200);
    });

    it('refuses the token of an account deactivated after login', async () => {
      const a = await newAccount(srv, 'acme');
      expect((await srv.api.get(path, { token: a.token })).status).to.equal(200);
      await srv.database.handle.db.updateTable('users').set({ is_active: false }).where('id', '=', a.userId).execute();
      await expect4010({ authorization: `Bearer ${a.token}` });
    });

    it('guards every bearer-protected platform operation built here', async () => {
      const probes: [string, string, unknown?][] = [
        ['POST', '/v1/rest/acme/users/register', { email: 'x@y.example', domain: 'y.example' }],
        [
          'POST',
          '/v1/rest/acme/integration',
          { org_id: 1, active: true, type: 'WEBHOOK', data: { endpoint: 'https://x.example', do_events: true, do_contacts: true } },
        ],
        [
          'PUT',
          '/v1/rest/acme/integration',
          { id: 1, org_id: 1, active: true, type: 'WEBHOOK', data: { endpoint: 'https://x.example', do_events: true, do_contacts: true } },
        ],
        [
          'POST',
          '/v1/rest/integration',
          { org_id: 1, active: true, type: 'WEBHOOK', data: { endpoint: 'https://x.example', do_events: true, do_contacts: true } },
        ],
        [
          'PUT',
          '/v1/rest/integration',
          { id: 1, org_id: 1, active: true, type: 'WEBHOOK', data: { endpoint: 'https://x.example', do_events: true, do_contacts: true } },
        ],
        ['GET', '/v1/rest/acme/integration?org_id=1'],
        ['GET', '/v1/rest/acme/integration/1'],
        ['DELETE', '/v1/rest/acme/integration/1'],
        ['GET', '/v1/rest/acme/organisations'],
        ['GET', '/v1/rest/acme/organisations/1'],
      ];
      for (const [method, p, body] of probes) {
        const r = await srv.api.request<PlatformError>(method, p, { body });
        expect(r.status, `${method} ${p}`).to.equal(401);
        expect(r.body.code).to.equal(4010);
      }
    });
  });
});
