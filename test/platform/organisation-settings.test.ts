// The organisation settings API: updateOrganisationSettings and
// rotateIdentitySecret, the settings in organisation reads, validation,
// tenant isolation, the identity secret (made at registration or on first
// need, encrypted at rest, rotated), and how a change reaches the cached
// policy of this process and, through NOTIFY, of another one.
import { expect } from 'chai';
import { createDb } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { ORGANISATIONS_CHANNEL } from '../../src/db/notifications.ts';
import { startOnDatabase } from '../../src/server.ts';
import { ApiClient, type BodyOf, type PlatformError } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

const REGISTRATION_TOKEN = 'settings-test-registration-token';
const HEX64 = /^[0-9a-f]{64}$/;

describe('organisation settings', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true' });
    account = await newAccount(srv);
  });
  after(() => srv?.stop());

  const path = (orgId: number, a = account) => `/v1/rest/${a.platform}/organisations/${orgId}`;
  const patch = <T = BodyOf<'updateOrganisationSettings'>>(orgId: number, body: unknown, a = account) =>
    srv.api.request<T>('PATCH', path(orgId, a), { body, token: a.token });
  const rotate = <T = BodyOf<'rotateIdentitySecret'>>(orgId: number, a = account) =>
    srv.api.post<T>(`${path(orgId, a)}/identity-secret/rotate`, undefined, { token: a.token });
  const stored = (orgId: OrgId) =>
    srv.deps.db
      .selectFrom('organisations')
      .select(['identity_verification', 'allowed_domains', 'enforce_origin', 'identity_secret_enc', 'modified_at'])
      .where('id', '=', orgId)
      .executeTakeFirstOrThrow();

  it('reads the defaults in get and list: optional, the own domain, no origin check, a secret', async () => {
    const m = await newMerchant(srv, account, { domain: `https://WWW.${unique('Shop')}.example.com/path` });
    const domain = m.organisation.domain
      .replace(/^https:\/\/www\./i, '')
      .replace(/\/path$/, '')
      .toLowerCase();
    const one = await srv.api.get<BodyOf<'getOrganisation'>>(path(m.organisation.id), { token: account.token });
    expect(one.status).to.equal(200);
    expect(one.body).to.include({ identity_verification: 'optional', enforce_origin: false });
    expect(one.body.allowed_domains).to.deep.equal([domain]);
    expect(one.body.identity_secret).to.match(HEX64);
    const list = await srv.api.get<BodyOf<'listOrganisations'>>(`/v1/rest/${account.platform}/organisations?q=${encodeURIComponent(domain)}`, {
      token: account.token,
    });
    expect(list.body.items).to.deep.equal([one.body]);
  });

  it('changes each setting alone or together, answers the organisation, and reads it back', async () => {
    const m = await newMerchant(srv, account);
    const id = m.organisation.id;
    const before = await stored(id);
    const r1 = await patch(id, { identity_verification: 'required' });
    expect(r1.status, r1.text).to.equal(200);
    expect(r1.body).to.include({ id, identity_verification: 'required', enforce_origin: false, domain: m.organisation.domain });
    expect(r1.body.allowed_domains).to.deep.equal([m.organisation.domain]);
    expect(r1.body.modified_at > (m.organisation as unknown as { created_at: string }).created_at).to.equal(true);
    expect((await stored(id)).modified_at.getTime()).to.be.greaterThan(before.modified_at.getTime());

    const r2 = await patch(id, {
      allowed_domains: ['Shop.Example.COM.', 'shop.example.com', 'cdn.example.net', '::1', '127.0.0.1'],
      enforce_origin: true,
    });
    expect(r2.status, r2.text).to.equal(200);
    expect(r2.body).to.include({ identity_verification: 'required', enforce_origin: true });
    expect(r2.body.allowed_domains).to.deep.equal(['shop.example.com', 'cdn.example.net', '[::1]', '127.0.0.1']);
    expect((await stored(id)).allowed_domains).to.deep.equal(['shop.example.com', 'cdn.example.net', '[::1]', '127.0.0.1']);
    const read = await srv.api.get<BodyOf<'getOrganisation'>>(path(id), { token: account.token });
    expect(read.body).to.deep.equal(r2.body);

    const r3 = await patch(id, { allowed_domains: null, identity_verification: 'optional' });
    expect(r3.body).to.include({ identity_verification: 'optional', enforce_origin: true });
    expect(r3.body.allowed_domains).to.deep.equal([m.organisation.domain]);
    expect((await stored(id)).allowed_domains).to.equal(null);
    // the secret is not touched by settings
    expect(r3.body.identity_secret).to.equal(r1.body.identity_secret);
  });

  it('refuses invalid input with 400/4000 and the problems in errors, changing nothing', async () => {
    const m = await newMerchant(srv, account);
    const id = m.organisation.id;
    const before = await stored(id);
    const many = Array.from({ length: 51 }, (_, i) => `s${i}.example.com`);
    const cases: [unknown, string][] = [
      [{}, ''],
      [{ colour: 'blue' }, '/colour'],
      [{ identity_verification: 'always' }, '/identity_verification'],
      [{ enforce_origin: 'yes' }, '/enforce_origin'],
      [{ allowed_domains: [] }, '/allowed_domains'],
      [{ allowed_domains: many }, '/allowed_domains'],
      [{ allowed_domains: 'shop.example.com' }, '/allowed_domains'],
      [{ allowed_domains: ['https://shop.example.com'] }, '/allowed_domains/0'],
      [{ allowed_domains: ['shop.example.com', 'shop.example.com:8080'] }, '/allowed_domains/1'],
      [{ allowed_domains: ['shop.example.com/cart'] }, '/allowed_domains/0'],
      [{ allowed_domains: ['com'] }, '/allowed_domains/0'],
      [{ allowed_domains: ['*.example.com'] }, '/allowed_domains/0'],
      [{ allowed_domains: ['1.2.3'] }, '/allowed_domains/0'],
      [{ allowed_domains: [''] }, '/allowed_domains/0'],
      [{ allowed_domains: ['ok.example.com', 7] }, '/allowed_domains/1'],
      [{ allowed_domains: ['x'.repeat(254)] }, '/allowed_domains/0'],
      [{ identity_secret: 'f'.repeat(64) }, '/identity_secret'],
      [{ honor_gpc: 'yes' }, '/honor_gpc'],
      [{ honor_gpc: null }, '/honor_gpc'],
      [{ visitor_retention_days: 0 }, '/visitor_retention_days'],
      [{ visitor_retention_days: -1 }, '/visitor_retention_days'],
      [{ visitor_retention_days: 3651 }, '/visitor_retention_days'],
      [{ visitor_retention_days: 1.5 }, '/visitor_retention_days'],
      [{ visitor_retention_days: '30' }, '/visitor_retention_days'],
      [{ visitor_retention_days: 1e300 }, '/visitor_retention_days'],
    ];
    for (const [body, where] of cases) {
      const r = await patch<PlatformError>(id, body);
      expect(r.status, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`).to.equal(400);
      expect(r.body.code).to.equal(4000);
      expect(
        r.body.errors!.map((e) => e.path),
        JSON.stringify(r.body),
      ).to.include(where);
    }
    expect(await stored(id)).to.deep.equal(before);
  });

  it('reads, changes and validates the privacy settings (honor_gpc, visitor_retention_days); the ingest policy carries them', async () => {
    const m = await newMerchant(srv, account);
    const id = m.organisation.id;
    const fresh = await srv.api.get<BodyOf<'getOrganisation'>>(path(id), { token: account.token });
    expect(fresh.body).to.include({ honor_gpc: true, visitor_retention_days: null });
    expect(await srv.deps.organisations.policy(id)).to.include({ honorGpc: true, suppressing: false });

    const r1 = await patch(id, { honor_gpc: false, visitor_retention_days: 395 });
    expect(r1.status, r1.text).to.equal(200);
    expect(r1.body).to.include({ honor_gpc: false, visitor_retention_days: 395, identity_verification: 'optional' });
    expect(
      await srv.deps.db.selectFrom('organisations').select(['honor_gpc', 'visitor_retention_days']).where('id', '=', id).executeTakeFirstOrThrow(),
    ).to.deep.equal({ honor_gpc: false, visitor_retention_days: 395 });
    // the change reaches this process's cached policy at once
    expect(await srv.deps.organisations.policy(id)).to.include({ honorGpc: false });
    for (const days of [1, 3650]) {
      const r = await patch(id, { visitor_retention_days: days });
      expect(r.body.visitor_retention_days, r.text).to.equal(days);
    }
    const r2 = await patch(id, { visitor_retention_days: null });
    expect(r2.body).to.include({ honor_gpc: false, visitor_retention_days: null });
    const r3 = await patch(id, { honor_gpc: true });
    expect(r3.body).to.include({ honor_gpc: true, visitor_retention_days: null });
    expect((await srv.api.get<BodyOf<'getOrganisation'>>(path(id), { token: account.token })).body).to.deep.equal(r3.body);

    // a non-empty suppression list shows in the policy (its identifies are checked against it)
    await srv.deps.db
      .insertInto('privacy_suppressions')
      .values({ org_id: id, subject_hash: srv.deps.subjects.hash(id, { type: 'email', value: 'jane@example.com' }), request_id: 1 })
      .execute();
    srv.deps.organisations.invalidate(id);
    expect(await srv.deps.organisations.policy(id)).to.include({ honorGpc: true, suppressing: true });
  });

  it('keeps other accounts out: 403/4030 on another account’s organisation (existing or not), 401 without a valid token', async () => {
    const victim = await newMerchant(srv, account);
    const other = await newAccount(srv);
    const before = await stored(victim.organisation.id);
    for (const id of [victim.organisation.id, 987654321]) {
      for (const r of [await patch<PlatformError>(id, { enforce_origin: true }, other), await rotate<PlatformError>(id, other)]) {
        expect(r.status, r.text).to.equal(403);
        expect(r.body.code).to.equal(4030);
        expect(r.text).to.not.include(before.identity_secret_enc ?? 'x');
      }
    }
    const foreign = await newAccount(srv, 'globex');
    const cross = await srv.api.request('PATCH', path(victim.organisation.id), { body: { enforce_origin: true }, token: foreign.token });
    expect(cross.status).to.equal(401);
    const none = await srv.api.request('PATCH', path(victim.organisation.id), { body: { enforce_origin: true } });
    expect(none.status).to.equal(401);
    expect(await stored(victim.organisation.id)).to.deep.equal(before);
  });

  it('keeps the identity secret encrypted at rest, and rotation replaces it', async () => {
    const m = await newMerchant(srv, account);
    const id = m.organisation.id;
    const first = (await srv.api.get<BodyOf<'getOrganisation'>>(path(id), { token: account.token })).body.identity_secret;
    const row = await stored(id);
    expect(row.identity_secret_enc).to.be.a('string').and.not.include(first);
    expect(srv.deps.cipher.decrypt(row.identity_secret_enc!)).to.equal(first);
    const r = await rotate(id);
    expect(r.status, r.text).to.equal(200);
    expect(r.body.identity_secret).to.match(HEX64).and.not.equal(first);
    expect(r.body.modified_at > (m.organisation as unknown as { modified_at: string }).modified_at).to.equal(true);
    expect((await srv.api.get<BodyOf<'getOrganisation'>>(path(id), { token: account.token })).body.identity_secret).to.equal(r.body.identity_secret);
    expect(srv.deps.cipher.decrypt((await stored(id)).identity_secret_enc!)).to.equal(r.body.identity_secret);
  });

  it('gives every new organisation a secret at registration (platform and analytics host), and older ones on first need', async () => {
    const viaPlatform = await newMerchant(srv, account);
    expect((await stored(viaPlatform.organisation.id)).identity_secret_enc).to.be.a('string');
    // the registration answer's organisation is the interface's Organisation, unchanged
    expect(Object.keys(viaPlatform.organisation).sort()).to.deep.equal([
      'country_code',
      'created_at',
      'currency',
      'domain',
      'features_enabled',
      'id',
      'is_active',
      'logo',
      'modified_at',
      'name',
      'referer',
      'token',
      'wid',
    ]);
    const n = unique('self');
    const r = await srv.api.post(`/api/v1/register?token=${REGISTRATION_TOKEN}`, {
      email: `${n}@bakery.example`,
      password: 'r1se&shine-2024',
      first_name: 'Maria',
      domain: `${n}.bakery.example`,
      entity: 'Bakery',
    });
    expect(r.status, r.text).to.equal(200);
    const self = await srv.deps.db
      .selectFrom('organisations')
      .select(['identity_secret_enc'])
      .where('domain_key', '=', `${n}.bakery.example`)
      .executeTakeFirstOrThrow();
    expect(self.identity_secret_enc).to.be.a('string');

    // an organisation from before identity verification: no secret until something needs one
    const old = await newMerchant(srv, account);
    await srv.deps.db.updateTable('organisations').set({ identity_secret_enc: null }).where('id', '=', old.organisation.id).execute();
    const [a, b] = await Promise.all([
      srv.api.get<BodyOf<'getOrganisation'>>(path(old.organisation.id), { token: account.token }),
      srv.api.get<BodyOf<'listOrganisations'>>(`/v1/rest/${account.platform}/organisations?q=${encodeURIComponent(old.organisation.domain)}`, {
        token: account.token,
      }),
    ]);
    expect(a.body.identity_secret).to.match(HEX64);
    expect(b.body.items[0]!.identity_secret).to.equal(a.body.identity_secret); // concurrent first needs agree
    expect(srv.deps.cipher.decrypt((await stored(old.organisation.id)).identity_secret_enc!)).to.equal(a.body.identity_secret);
    // switching to `required` makes one too
    const older = await newMerchant(srv, account);
    await srv.deps.db.updateTable('organisations').set({ identity_secret_enc: null }).where('id', '=', older.organisation.id).execute();
    expect((await patch(older.organisation.id, { identity_verification: 'required' })).body.identity_secret).to.match(HEX64);
  });

  it('applies a change at once in this process, and through NOTIFY in another process on the same database', async () => {
    const m = await newMerchant(srv, account);
    const id = m.organisation.id;
    const handle = createDb(srv.database.url, { max: 4, onError: () => {} });
    const other = await startOnDatabase(srv.config, handle, createLogger('silent'), { dispatcher: false });
    try {
      const otherApi = new ApiClient(other.url);
      const send = (api: ApiClient) =>
        api.post(`/jsv1/${id}/r1/c1/null/event/view`, { page: 'https://x.example/' }, { headers: { origin: 'https://phish.attacker.example' } });
      // both processes have the policy cached (no origin check)
      expect((await send(srv.api)).status).to.equal(202);
      expect((await send(otherApi)).status).to.equal(202);
      expect((await other.deps.organisations.policy(id))?.enforceOrigin).to.equal(false);
      const notified = new Promise<void>((resolve) => {
        const off = other.webhooks.notifications.on(ORGANISATIONS_CHANNEL, (payload) => {
          if (payload === String(id)) {
            off();
            resolve();
          }
        });
      });
      expect((await patch(id, { enforce_origin: true })).status).to.equal(200);
      // this process dropped its entry itself
      expect((await send(srv.api)).status).to.equal(403);
      // the other one on the notification (its own listener runs before this one), long before the 5 s expiry
      await notified;
      expect((await other.deps.organisations.policy(id))?.enforceOrigin).to.equal(true);
      expect((await send(otherApi)).status).to.equal(403);
    } finally {
      await other.close();
      await handle.close();
    }
  });
});
