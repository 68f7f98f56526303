// registerClientUser (register a user, creating an organisation), its error
// codes (4009, 40010) and docs/design.md's registration rules ("Platform API").
import { expect } from 'chai';
import { hashPassword } from '../../src/platform/passwords.crypto.ts';
import {
  DomainTaken,
  EmailTaken,
  InvalidDomain,
  createUserWithOrganisation,
  organisationTokenHash,
} from '../../src/platform/registration.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, unique } from '../support/accounts.ts';
import { errorBody, type BodyOf, type PlatformError } from '../support/client.ts';
import { testOrgId } from '../support/org-id.ts';

const MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$/;
const EMAIL_TAKEN = { code: 4009, message: 'Email Already exists' };
const DOMAIN_TAKEN = { code: 40010, message: 'Organisation Exists. Cannot assign existing Organisations.' };

describe('register a client user (registerClientUser)', () => {
  let srv: TestServer;
  let acme: Account;

  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    acme = await newAccount(srv, 'acme');
  });
  after(() => srv.stop());

  const register = <T = BodyOf<'registerClientUser'>>(body: Record<string, unknown>, account: Account = acme) =>
    srv.api.post<T>(`/v1/rest/${account.platform}/users/register`, body, { token: account.token });

  function fresh() {
    const n = unique('reg');
    return { email: `${n}@merchant.example`, domain: `${n}.shop.example` };
  }

  it('answers 201 with the user, the organisation exactly as created, code 2011 and message Created', async () => {
    const { email, domain } = fresh();
    const r = await register({ email, name: 'Jane Doe', phone: '+14155550123', domain, organisation_name: "Jane's Linen Shop" });
    expect(r.status).to.equal(201);
    expect(Object.keys(r.body).sort()).to.deep.equal(['code', 'message', 'organisation', 'user']);
    expect(r.body.code).to.equal(2011);
    expect(r.body.message).to.equal('Created');
    const { user, organisation } = r.body;
    expect(user).to.deep.equal({
      id: user.id,
      name: 'Jane Doe',
      email,
      username: email,
      is_active: true,
      phone: '+14155550123',
      is_email_verified: false,
      is_phone_verified: false,
      is_superuser: false,
    });
    expect(user.id).to.be.a('number');
    expect(organisation).to.deep.equal({
      id: organisation.id,
      token: organisation.token,
      name: '',
      domain,
      currency: '',
      country_code: '',
      is_active: true,
      logo: '',
      wid: null,
      created_at: organisation.created_at,
      modified_at: organisation.modified_at,
      referer: null,
      features_enabled: '',
    });
    expect(organisation.id).to.be.a('number');
  });

  it('formats created_at and modified_at as YYYY-MM-DDTHH:MM:SS.ffffff+00:00, the current time, equal on creation', async () => {
    const before = Date.now();
    const r = await register(fresh());
    const { created_at, modified_at } = r.body.organisation;
    expect(created_at).to.match(MICROS);
    expect(modified_at).to.equal(created_at);
    const t = Date.parse(created_at);
    expect(t).to.be.within(before - 60_000, Date.now() + 60_000);
  });

  it('generates a fresh organisation token (32 random bytes, base64url), stored sealed with its sha256', async () => {
    const a = (await register(fresh())).body.organisation;
    const b = (await register(fresh())).body.organisation;
    for (const o of [a, b]) {
      expect(o.token).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(o.token, 'base64url')).to.have.length(32);
      const row = await srv.database.handle.db
        .selectFrom('organisations')
        .select(['token', 'token_enc', 'token_hash'])
        .where('id', '=', testOrgId(o.id))
        .executeTakeFirstOrThrow();
      // the token is stored encrypted only (no clear copy)
      expect(row.token).to.equal(null);
      expect(srv.deps.cipher.decrypt(row.token_enc!)).to.equal(o.token);
      expect(Buffer.compare(row.token_hash, organisationTokenHash(o.token))).to.equal(0);
    }
    expect(a.token).to.not.equal(b.token);
  });

  it('needs only email and domain: name, phone and organisation_name default to ""', async () => {
    const body = fresh();
    const r = await register(body);
    expect(r.status).to.equal(201);
    expect(r.body.user).to.include({ name: '', phone: '' });
    const detail = await srv.api.get<BodyOf<'getOrganisation'>>(`/v1/rest/acme/organisations/${r.body.organisation.id}`, { token: acme.token });
    expect(detail.body.organisation_name).to.equal('');
  });

  it('keeps organisation_name (shown by the organisation reads) while name stays ""', async () => {
    const r = await register({ ...fresh(), organisation_name: 'Linen & Co' });
    expect(r.body.organisation.name).to.equal('');
    expect(r.body.organisation).to.not.have.property('organisation_name');
    const detail = await srv.api.get<BodyOf<'getOrganisation'>>(`/v1/rest/acme/organisations/${r.body.organisation.id}`, { token: acme.token });
    expect(detail.status).to.equal(200);
    expect(detail.body).to.include({ name: '', organisation_name: 'Linen & Co' });
  });

  it('returns the domain as supplied (trimmed)', async () => {
    const n = unique('trim');
    const r = await register({ email: `${n}@merchant.example`, domain: `  https://www.${n}.Shop.example/path  ` });
    expect(r.status).to.equal(201);
    expect(r.body.organisation.domain).to.equal(`https://www.${n}.Shop.example/path`);
  });

  it('assigns the organisation to the new user (owner) and to the calling platform account', async () => {
    const r = await register(fresh());
    const members = await srv.database.handle.db
      .selectFrom('organisation_members')
      .select(['user_id', 'role'])
      .where('org_id', '=', testOrgId(r.body.organisation.id))
      .orderBy('role')
      .execute();
    expect(members).to.deep.equal([
      { user_id: r.body.user.id, role: 'owner' },
      { user_id: acme.userId, role: 'platform' },
    ]);
    const list = await srv.api.get<BodyOf<'listOrganisations'>>('/v1/rest/acme/organisations', { token: acme.token });
    expect(list.body.items.map((o) => o.id)).to.include(r.body.organisation.id);
  });

  it('creates a user who cannot log in (no password)', async () => {
    const body = fresh();
    await register(body);
    const row = await srv.database.handle.db
      .selectFrom('users')
      .select(['password_hash', 'platform_name'])
      .where('email', '=', body.email)
      .executeTakeFirstOrThrow();
    expect(row).to.deep.equal({ password_hash: null, platform_name: null });
  });

  describe('conflicts', () => {
    it('answers an email already registered with 409/4009 "Email Already exists", case-insensitively', async () => {
      const body = fresh();
      expect((await register(body)).status).to.equal(201);
      const again = await register({ email: body.email.toUpperCase(), domain: fresh().domain });
      expect(again.status).to.equal(409);
      expect(errorBody(again)).to.deep.equal(EMAIL_TAKEN);
    });

    it("counts platform accounts' emails as registered too", async () => {
      const r = await register({ email: acme.email, domain: fresh().domain });
      expect(r.status).to.equal(409);
      expect(errorBody(r)).to.deep.equal(EMAIL_TAKEN);
    });

    it('answers a domain already registered with 409/40010, comparing without case, scheme, www., path or trailing dot', async () => {
      const n = unique('dom');
      const first = await register({ email: `${n}-1@merchant.example`, domain: `${n}.example.com` });
      expect(first.status).to.equal(201);
      const variants = [
        `${n}.example.com`,
        `${n.toUpperCase()}.EXAMPLE.COM`,
        `https://${n}.example.com`,
        `http://www.${n}.example.com/shop?x=1`,
        `${n}.example.com.`,
        `www.${n}.example.com/`,
      ];
      for (const [i, domain] of variants.entries()) {
        const r = await register({ email: `${n}-v${i}@merchant.example`, domain });
        expect(r.status, domain).to.equal(409);
        expect(errorBody(r), domain).to.deep.equal(DOMAIN_TAKEN);
      }
      // a different domain is a different organisation
      const sub = await register({ email: `${n}-sub@merchant.example`, domain: `eu.${n}.example.com` });
      expect(sub.status).to.equal(201);
    });

    it('checks the email before the domain: both taken answers 4009', async () => {
      const body = fresh();
      await register(body);
      const r = await register(body);
      expect(r.status).to.equal(409);
      expect(errorBody(r)).to.deep.equal(EMAIL_TAKEN);
    });

    it('creates nothing when it fails: the email of a refused registration stays free', async () => {
      const taken = fresh();
      await register(taken);
      const n = unique('free');
      const refused = await register({ email: `${n}@merchant.example`, domain: taken.domain });
      expect(refused.status).to.equal(409);
      const count = await srv.database.handle.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('email_key', '=', `${n}@merchant.example`)
        .executeTakeFirstOrThrow();
      expect(Number(count.n)).to.equal(0);
      const later = await register({ email: `${n}@merchant.example`, domain: `${n}.shop.example` });
      expect(later.status).to.equal(201);
    });

    it('shares the email and domain spaces with the analytics-host registration (createUserWithOrganisation)', async () => {
      const n = unique('ana');
      const made = await srv.database.handle.db.transaction().execute((tx) =>
        createUserWithOrganisation(
          tx,
          {
            email: `${n}@self.example`,
            name: 'Self Service',
            phone: '',
            domain: `${n}.self.example`,
            organisationName: 'Self Service Ltd',
            passwordHash: 'scrypt$16384$8$1$c2FsdA==$aGFzaA==',
          },
          srv.deps.cipher,
        ),
      );
      expect(made.user.email).to.equal(`${n}@self.example`);
      expect(made.organisation.domain).to.equal(`${n}.self.example`);
      const byEmail = await register({ email: `${n.toUpperCase()}@SELF.example`, domain: fresh().domain });
      expect(errorBody(byEmail)).to.deep.equal(EMAIL_TAKEN);
      const byDomain = await register({ email: `${n}-2@self.example`, domain: `WWW.${n}.self.example` });
      expect(errorBody(byDomain)).to.deep.equal(DOMAIN_TAKEN);
    });

    it('lets the service report typed errors to other areas (EmailTaken, DomainTaken, InvalidDomain), rolling back', async () => {
      const body = fresh();
      await register(body);
      const input = { name: '', phone: '', organisationName: 'X', passwordHash: await hashPassword('pw-123456') };
      const attempt = (email: string, domain: string) =>
        srv.database.handle.db
          .transaction()
          .execute((tx) => createUserWithOrganisation(tx, { ...input, email, domain }, srv.deps.cipher))
          .then(
            () => undefined,
            (e: unknown) => e,
          );
      expect(await attempt(body.email, fresh().domain)).to.be.instanceOf(EmailTaken);
      const n = unique('typed');
      expect(await attempt(`${n}@x.example`, body.domain)).to.be.instanceOf(DomainTaken);
      expect(await attempt(`${n}@x.example`, 'https://')).to.be.instanceOf(InvalidDomain);
      const left = await srv.database.handle.db.selectFrom('users').select('id').where('email_key', '=', `${n}@x.example`).execute();
      expect(left).to.have.length(0);
    });

    it('registers exactly one of concurrent registrations of one email; the others get 4009, never 500', async () => {
      const n = unique('race');
      const replies = await Promise.all(
        Array.from({ length: 6 }, (_, i) => register({ email: `${n}@merchant.example`, domain: `${n}-${i}.shop.example` })),
      );
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).to.deep.equal([201, 409, 409, 409, 409, 409]);
      for (const r of replies.filter((x) => x.status === 409)) expect(errorBody(r)).to.deep.equal(EMAIL_TAKEN);
      const orgs = await srv.database.handle.db.selectFrom('organisations').select('id').where('domain', 'like', `${n}-%`).execute();
      expect(orgs).to.have.length(1);
    });

    it('registers exactly one of concurrent registrations of one domain; the others get 40010, never 500', async () => {
      const n = unique('race');
      const replies = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          register({ email: `${n}-${i}@merchant.example`, domain: i % 2 ? `${n}.shop.example` : `WWW.${n}.shop.example` }),
        ),
      );
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).to.deep.equal([201, 409, 409, 409, 409, 409]);
      for (const r of replies.filter((x) => x.status === 409)) expect(errorBody(r)).to.deep.equal(DOMAIN_TAKEN);
      const users = await srv.database.handle.db.selectFrom('users').select('id').where('email_key', 'like', `${n}-%`).execute();
      expect(users).to.have.length(1);
    });
  });

  describe('validation (400/4000)', () => {
    it('requires email and domain', async () => {
      for (const body of [{ domain: 'x.example' }, { email: 'a@x.example' }, {}]) {
        const r = await register<PlatformError>(body);
        expect(r.status, JSON.stringify(body)).to.equal(400);
        expect(r.body.code).to.equal(4000);
        expect(r.body.errors).to.be.an('array').that.is.not.empty;
      }
    });

    it('refuses a malformed email, unknown fields and wrong types', async () => {
      const { domain } = fresh();
      for (const body of [
        { email: 'not-an-email', domain },
        { email: 'a@x.example', domain, role: 'admin' },
        { email: 'a@x.example', domain, name: 7 },
        { email: 'a@x.example', domain: '' },
      ]) {
        const r = await register<PlatformError>(body);
        expect(r.status, JSON.stringify(body)).to.equal(400);
        expect(r.body.code).to.equal(4000);
      }
    });

    it('refuses a domain with nothing domain-like in it', async () => {
      for (const domain of ['https://', '   ', '/path/only', '...', 'http://user@/x']) {
        const r = await register<PlatformError>({ email: `${unique('nd')}@merchant.example`, domain });
        expect(r.status, domain).to.equal(400);
        expect(r.body.code).to.equal(4000);
      }
    });
  });
});
