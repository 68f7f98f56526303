// registerAnalyticsUser (a user and an organisation on the analytics host),
// its token query parameter and its 400 messages and docs/design.md "Analytics host":
// 401 for a wrong or missing token, 403 when disabled, one email space and one
// domain space with the platform API, the new organisation's token working for
// learning events.
import { expect } from 'chai';
import { verifyPassword } from '../../src/platform/passwords.crypto.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { REGISTRATION_TOKEN, learn, organisationOf, register, registration } from '../support/registration.ts';
import { errorBody, type BodyOf, type PlatformError, type AnalyticsFailure } from '../support/client.ts';
import { expectInvalid } from '../support/expect.ts';

const SUCCESS = { status: 'success', message: 'Registration successful' };
const ORG_EXISTS = { status: 'error', message: 'Org already exists' };
const alreadyRegistered = (email: string) => ({ status: 'error', message: `${email} already registered! Please sign in to continue.` });

describe('analytics registration (registerAnalyticsUser)', () => {
  let srv: TestServer;
  let acme: Account;

  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true', REGISTRATION_TOKEN });
    acme = await newAccount(srv, 'acme');
  });
  after(() => srv.stop());

  const db = () => srv.database.handle.db;
  const userOf = (email: string) => db().selectFrom('users').selectAll().where('email_key', '=', email.trim().toLowerCase()).executeTakeFirst();

  describe('success', () => {
    it('answers 200 {status: success, message: Registration successful} and creates the user and the organisation', async () => {
      const body = registration();
      const r = await register(srv, body);
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal(SUCCESS);

      const user = await userOf(body.email);
      expect(user).to.include({
        email: body.email,
        name: 'Maria',
        phone: '',
        platform_name: null,
        is_active: true,
        is_email_verified: false,
        is_phone_verified: false,
        is_superuser: false,
      });
      expect(user!.password_hash).to.match(/^scrypt\$/);
      expect(await verifyPassword(body.password, user!.password_hash)).to.equal(true);
      expect(await verifyPassword('wrong password', user!.password_hash)).to.equal(false);

      const org = await organisationOf(srv, body.domain);
      expect(org).to.include({
        organisation_name: "Maria's Bakery",
        name: '',
        domain: body.domain,
        currency: '',
        country_code: '',
        is_active: true,
        logo: '',
        wid: null,
        referer: null,
        features_enabled: '',
        created_by: user!.id,
      });
      const members = await db().selectFrom('organisation_members').select(['user_id', 'role']).where('org_id', '=', org!.id).execute();
      expect(members).to.deep.equal([{ user_id: user!.id, role: 'owner' }]);
    });

    it('creates an organisation whose token then works for learning events', async () => {
      const body = registration();
      expect((await register(srv, body)).status).to.equal(200);
      const org = await organisationOf(srv, body.domain);
      const r = await learn(srv, { org_token: org!.token, eventName: 'signup', eventVal: { plan: 'basic' } });
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal({ status: 'success' });
      const events = await db().selectFrom('learn_events').select(['event_name', 'event_val']).where('org_id', '=', org!.id).execute();
      expect(events).to.deep.equal([{ event_name: 'signup', event_val: { plan: 'basic' } }]);
    });

    it('stores the domain as sent (trimmed) and compares it like the platform API', async () => {
      const n = unique('dom');
      const first = registration({ domain: `  https://www.${n}.Example.org/shop?x=1  ` });
      expect((await register(srv, first)).status).to.equal(200);
      expect(await organisationOf(srv, `https://www.${n}.Example.org/shop?x=1`)).to.not.equal(undefined);
      for (const domain of [`${n}.example.org`, `WWW.${n}.EXAMPLE.ORG.`, `http://${n}.example.org:8080/other`]) {
        const r = await register(srv, registration({ domain }));
        expect(r.status, domain).to.equal(400);
        expect(errorBody(r), domain).to.deep.equal(ORG_EXISTS);
      }
    });
  });

  describe('already registered (400, status error)', () => {
    it('answers a taken email with "<EMAIL> already registered! Please sign in to continue." (the email as sent), case-insensitively', async () => {
      const first = registration();
      expect((await register(srv, first)).status).to.equal(200);
      const again = registration({ email: first.email });
      const r = await register(srv, again);
      expect(r.status).to.equal(400);
      expect(errorBody(r)).to.deep.equal(alreadyRegistered(first.email));
      const upper = first.email.toUpperCase();
      const r2 = await register(srv, registration({ email: upper }));
      expect(r2.status).to.equal(400);
      expect(errorBody(r2)).to.deep.equal(alreadyRegistered(upper));
      // nothing was created for the refused registrations
      expect(await organisationOf(srv, again.domain)).to.equal(undefined);
    });

    it('answers a taken domain with "Org already exists" and creates no user', async () => {
      const first = registration();
      expect((await register(srv, first)).status).to.equal(200);
      const again = registration({ domain: first.domain });
      const r = await register(srv, again);
      expect(r.status).to.equal(400);
      expect(errorBody(r)).to.deep.equal(ORG_EXISTS);
      expect(await userOf(again.email)).to.equal(undefined);
    });

    it('checks the email before the domain', async () => {
      const first = registration();
      expect((await register(srv, first)).status).to.equal(200);
      const r = await register(srv, registration({ email: first.email, domain: first.domain }));
      expect(errorBody(r)).to.deep.equal(alreadyRegistered(first.email));
    });
  });

  describe('one email space and one domain space with the platform API', () => {
    it('refuses an email or a domain registered through the platform API', async () => {
      const m = await newMerchant(srv, acme);
      const byEmail = await register(srv, registration({ email: m.user.email }));
      expect(byEmail.status).to.equal(400);
      expect(errorBody(byEmail)).to.deep.equal(alreadyRegistered(m.user.email));
      const byDomain = await register(srv, registration({ domain: `https://www.${m.organisation.domain}/` }));
      expect(byDomain.status).to.equal(400);
      expect(errorBody(byDomain)).to.deep.equal(ORG_EXISTS);
    });

    it('makes the platform API refuse an email (409/4009) or a domain (409/40010) registered here', async () => {
      const body = registration();
      expect((await register(srv, body)).status).to.equal(200);
      const byEmail = await srv.api.post(
        '/v1/rest/acme/users/register',
        { email: body.email.toUpperCase(), domain: `${unique('p')}.shop.example` },
        { token: acme.token },
      );
      expect(byEmail.status).to.equal(409);
      expect(errorBody(byEmail)).to.deep.equal({ code: 4009, message: 'Email Already exists' });
      const byDomain = await srv.api.post(
        '/v1/rest/acme/users/register',
        { email: `${unique('p')}@merchant.example`, domain: body.domain },
        { token: acme.token },
      );
      expect(byDomain.status).to.equal(409);
      expect(errorBody(byDomain)).to.deep.equal({ code: 40010, message: 'Organisation Exists. Cannot assign existing Organisations.' });
    });

    it('does not let an analytics registration log in to the platform API', async () => {
      const body = registration();
      expect((await register(srv, body)).status).to.equal(200);
      const r = await srv.api.post<PlatformError>(
        '/v1/rest/acme/users/login',
        { email: body.email, password: body.password },
        { headers: { 'x-forwarded-for': '203.0.113.9' } },
      );
      expect(r.status).to.equal(401);
      expect(r.body.code).to.equal(4011);
    });
  });

  describe('concurrency', () => {
    it('registers exactly one of concurrent registrations of one email; the others get its message, never 500', async () => {
      const email = `${unique('race')}@owner.example`;
      const bodies = Array.from({ length: 6 }, () => registration({ email }));
      const replies = await Promise.all(bodies.map((b) => register(srv, b)));
      expect(replies.map((r) => r.status).sort()).to.deep.equal([200, 400, 400, 400, 400, 400]);
      for (const r of replies.filter((x) => x.status === 400)) expect(errorBody(r)).to.deep.equal(alreadyRegistered(email));
      const orgs = await Promise.all(bodies.map((b) => organisationOf(srv, b.domain)));
      expect(orgs.filter(Boolean)).to.have.length(1);
    });

    it('registers exactly one of concurrent registrations of one domain; the others get "Org already exists"', async () => {
      const n = unique('race');
      const bodies = Array.from({ length: 6 }, (_, i) => registration({ domain: i % 2 ? `${n}.example.org` : `https://WWW.${n}.example.org/` }));
      const replies = await Promise.all(bodies.map((b) => register(srv, b)));
      expect(replies.map((r) => r.status).sort()).to.deep.equal([200, 400, 400, 400, 400, 400]);
      for (const r of replies.filter((x) => x.status === 400)) expect(errorBody(r)).to.deep.equal(ORG_EXISTS);
      const users = await Promise.all(bodies.map((b) => userOf(b.email)));
      expect(users.filter(Boolean)).to.have.length(1);
    });

    it("lets one of an analytics and a platform registration of one email win, the other gets its own area's answer", async () => {
      const email = `${unique('race')}@owner.example`;
      const [a, p] = await Promise.all([
        register(srv, registration({ email })),
        srv.api.post<BodyOf<'registerClientUser', 409>>(
          '/v1/rest/acme/users/register',
          { email, domain: `${unique('p')}.shop.example` },
          { token: acme.token },
        ),
      ]);
      expect([a.status, p.status].sort()).to.satisfy((s: number[]) => (s[0] === 200 && s[1] === 409) || (s[0] === 201 && s[1] === 400));
      if (a.status === 400) expect(errorBody(a)).to.deep.equal(alreadyRegistered(email));
      if (p.status === 409) expect(p.body.code).to.equal(4009);
    });
  });

  describe('registration token', () => {
    it('answers a missing, empty or wrong token with 401 {status: error, message} and creates nothing', async () => {
      const body = registration();
      const tokens: (string | null)[] = [
        null,
        '',
        'wrong',
        `${REGISTRATION_TOKEN}x`,
        REGISTRATION_TOKEN.slice(0, -1),
        REGISTRATION_TOKEN.toUpperCase(),
        ` ${REGISTRATION_TOKEN}`,
      ];
      for (const token of tokens) {
        const r = await register<BodyOf<'registerAnalyticsUser', 401>>(srv, body, { token });
        expect(r.status, String(token)).to.equal(401);
        expect(r.body.status).to.equal('error');
        expect(r.body.message).to.be.a('string').and.not.empty;
        expect(Object.keys(errorBody(r)).sort()).to.deep.equal(['message', 'status']);
      }
      expect(await userOf(body.email)).to.equal(undefined);
      expect(await organisationOf(srv, body.domain)).to.equal(undefined);
      expect((await register(srv, body)).status).to.equal(200);
    });

    it('takes the token from the query only, not from a header or the body', async () => {
      const body = registration();
      const r = await srv.api.post('/api/v1/register', body, {
        headers: { authorization: `Bearer ${REGISTRATION_TOKEN}`, 'x-forwarded-for': '203.0.113.10' },
      });
      expect(r.status).to.equal(401);
      const withField = await register(srv, { ...body, token: REGISTRATION_TOKEN }, { token: null });
      expectInvalid(withField, 'token in the body');
    });
  });

  describe('validation (400, status failed, code 5100)', () => {
    it('requires all five fields', async () => {
      for (const key of ['email', 'password', 'first_name', 'domain', 'entity']) {
        const body: Record<string, unknown> = registration();
        delete body[key];
        const r = await register<AnalyticsFailure>(srv, body);
        expectInvalid(r, `without ${key}`);
        expect(r.body.reason).to.include(key);
      }
    });

    it('refuses wrong types, empty strings, a malformed email, a short password and unknown fields', async () => {
      const bad: Record<string, unknown>[] = [
        registration({ email: 'not-an-email' }),
        registration({ email: ' spaced@owner.example' }),
        registration({ email: 7 }),
        registration({ password: 'short12' }),
        registration({ password: 12345678 }),
        registration({ first_name: '' }),
        registration({ first_name: null }),
        registration({ domain: '' }),
        registration({ entity: '' }),
        registration({ entity: ['x'] }),
        registration({ role: 'admin' }),
      ];
      for (const body of bad) expectInvalid(await register(srv, body), JSON.stringify(body));
    });

    it('accepts a password of exactly 8 characters', async () => {
      expect((await register(srv, registration({ password: '12345678' }))).status).to.equal(200);
    });

    it('refuses a domain with nothing domain-like left after normalisation', async () => {
      for (const domain of ['https://', '/path/only', '...', 'https:///x', '  .  ']) {
        const body = registration({ domain });
        const r = await register<AnalyticsFailure>(srv, body);
        expectInvalid(r, domain);
        expect(r.body.reason).to.include('/domain');
        expect(await userOf(body.email)).to.equal(undefined);
      }
    });

    it('refuses text PostgreSQL cannot store with 5100, never 500', async () => {
      for (const over of [
        { first_name: 'Ma\u0000ria' },
        { entity: 'Bake\u0000ry' },
        { domain: `${unique('nul')}.exa\u0000mple` },
        { entity: 'lone \ud800' },
      ]) {
        const body = registration(over);
        const r = await srv.api.request('POST', `/api/v1/register?token=${REGISTRATION_TOKEN}`, {
          raw: JSON.stringify(body),
          headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.11' },
        });
        expectInvalid(r, JSON.stringify(over));
        expect(await userOf(body.email)).to.equal(undefined);
      }
    });

    it('answers a missing or unparsable body with 5100 and another media type with 415/5115', async () => {
      const none = await srv.api.request('POST', `/api/v1/register?token=${REGISTRATION_TOKEN}`);
      expectInvalid(none, 'no body');
      for (const raw of ['', '{bad', '[]', '"x"']) {
        const r = await srv.api.request('POST', `/api/v1/register?token=${REGISTRATION_TOKEN}`, {
          raw,
          headers: { 'content-type': 'application/json' },
        });
        expectInvalid(r, `raw ${raw}`);
      }
      const form = await srv.api.request('POST', `/api/v1/register?token=${REGISTRATION_TOKEN}`, {
        raw: 'email=a%40b.example',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status).to.equal(415);
      expect(form.body).to.include({ status: 'failed', code: 5115 });
    });
  });
});

describe('analytics registration without REGISTRATION_TOKEN', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  it('is disabled: 403 {status: error, message} with or without a token, and creates nothing', async () => {
    const body = registration();
    for (const token of [null, '', REGISTRATION_TOKEN, 'anything']) {
      const r = await register<BodyOf<'registerAnalyticsUser', 403>>(srv, body, { token });
      expect(r.status, String(token)).to.equal(403);
      expect(r.body.status).to.equal('error');
      expect(r.body.message).to.be.a('string').and.not.empty;
    }
    expect(await organisationOf(srv, body.domain)).to.equal(undefined);
  });
});
