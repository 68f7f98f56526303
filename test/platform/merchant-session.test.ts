// Merchant sessions (issue 15): a merchant who registered through the
// analytics host logs in under the reserved platform name `merchant` and
// works on its own organisation only. Tried as an attacker would: with a
// merchant session against another merchant's and a platform's
// organisation, on every organisation-scoped operation, on the platform-only
// one, on other platforms' paths, and with tokens signed for the wrong realm.
import { expect } from 'chai';
import { ensurePlatformAccount, AccountError } from '../../src/platform/accounts.service.ts';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, uniqueIp, webhookBody } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';
import { testOrgId } from '../support/org-id.ts';

const M = '/v1/rest/merchant';

interface Self {
  email: string;
  password: string;
  domain: string;
  orgId: OrgId;
  token: string;
}

describe('merchant sessions (self-registered merchants)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let platform: Account;
  let alice: Self;
  let bob: Self;
  let platformOrg: OrgId;
  let platformHook: number;
  let bobHook: number;

  const login = <T = BodyOf<'loginPlatformUser'>>(platformName: string, email: string, password: string) =>
    srv.api.post<T>(`/v1/rest/${platformName}/users/login`, { email, password }, { headers: { 'x-forwarded-for': uniqueIp() } });

  async function selfRegistered(): Promise<Self> {
    const body = registration();
    const r = await register(srv, body);
    expect(r.status, r.text).to.equal(200);
    const l = await login('merchant', body.email, body.password);
    expect(l.status, l.text).to.equal(200);
    const list = await srv.api.get<BodyOf<'listOrganisations'>>(`${M}/organisations`, { token: l.body.bearer_token });
    expect(list.status, list.text).to.equal(200);
    expect(list.body.items).to.have.length(1);
    return { email: body.email, password: body.password, domain: body.domain, orgId: testOrgId(list.body.items[0]!.id), token: l.body.bearer_token };
  }

  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true' });
    platform = await newAccount(srv);
    const m = await newMerchant(srv, platform);
    platformOrg = m.organisation.id;
    platformHook = (await newWebhook(srv, platform, platformOrg)).id;
    alice = await selfRegistered();
    bob = await selfRegistered();
    const hb = await srv.api.post<BodyOf<'createIntegration'>>(`${M}/integration`, webhookBody(bob.orgId), { token: bob.token });
    expect(hb.status, hb.text).to.equal(201);
    bobHook = hb.body.integration.id;
  });
  after(() => srv.stop());

  it('signs a self-registered merchant in and shows its own organisation: token, settings, integrations, visitors, events, learning events', async () => {
    const list = await srv.api.get<BodyOf<'listOrganisations'>>(`${M}/organisations`, { token: alice.token });
    expect(list.body.items.map((o) => o.id)).to.deep.equal([alice.orgId]);
    const org = await srv.api.get<BodyOf<'getOrganisation'>>(`${M}/organisations/${alice.orgId}`, { token: alice.token });
    expect(org.status).to.equal(200);
    expect(org.body.domain).to.equal(alice.domain);
    // the token works for learning events: the merchant can now use it
    const learned = await srv.api.post('/rest/v1/learn/event', { org_token: org.body.token, eventName: 'signup', eventVal: 'x' });
    expect(learned.status, learned.text).to.equal(200);
    const learns = await srv.api.get<BodyOf<'listLearnEvents'>>(`${M}/organisations/${alice.orgId}/learn-events`, { token: alice.token });
    expect(learns.body.items.map((e) => e.event_name)).to.deep.equal(['signup']);
    // a visitor and an event, read back
    expect((await srv.api.post(`/jsv1/${alice.orgId}/r-1/c-1/null/event/categoryview`, { category: 'bread' })).status).to.equal(202);
    expect((await srv.api.get(`${M}/organisations/${alice.orgId}/visitors/c-1`, { token: alice.token })).status).to.equal(200);
    const events = await srv.api.get<BodyOf<'listEvents'>>(`${M}/organisations/${alice.orgId}/events`, { token: alice.token });
    expect(events.body.items).to.have.length(1);
    expect((await srv.api.get(`${M}/organisations/${alice.orgId}/visitors`, { token: alice.token })).status).to.equal(200);
    expect((await srv.api.get(`${M}/organisations/${alice.orgId}/stats`, { token: alice.token })).status).to.equal(200);
    // integrations on both path forms, then read, patch, list
    const made = await srv.api.post<BodyOf<'createIntegration'>>(`${M}/integration`, webhookBody(alice.orgId), { token: alice.token });
    expect(made.status, made.text).to.equal(201);
    const unscoped = await srv.api.post('/v1/rest/integration', webhookBody(alice.orgId), { token: alice.token });
    expect(unscoped.status, unscoped.text).to.equal(201);
    const id = made.body.integration.id;
    expect((await srv.api.get(`${M}/integration/${id}`, { token: alice.token })).status).to.equal(200);
    expect((await srv.api.request('PATCH', `${M}/integration/${id}`, { token: alice.token, body: { active: false } })).status).to.equal(200);
    expect(
      (await srv.api.get<BodyOf<'listIntegrations'>>(`${M}/integration?org_id=${alice.orgId}`, { token: alice.token })).body.items,
    ).to.have.length(2);
    expect((await srv.api.get(`${M}/organisations/${alice.orgId}/deliveries`, { token: alice.token })).status).to.equal(200);
    const settings = await srv.api.request('PATCH', `${M}/organisations/${alice.orgId}`, { token: alice.token, body: { enforce_origin: false } });
    expect(settings.status, settings.text).to.equal(200);
  });

  it('refuses every read and write of another organisation (another merchant’s, a platform’s)', async () => {
    const before = await srv.database.handle.db
      .selectFrom('integrations')
      .selectAll()
      .where('org_id', 'in', [bob.orgId, platformOrg])
      .orderBy('id')
      .execute();
    for (const other of [bob.orgId, platformOrg]) {
      const t = { token: alice.token };
      const orgForbidden = [
        await srv.api.get<PlatformError>(`${M}/organisations/${other}`, t),
        await srv.api.request<PlatformError>('PATCH', `${M}/organisations/${other}`, { ...t, body: { enforce_origin: true } }),
        await srv.api.post<PlatformError>(`${M}/organisations/${other}/identity-secret/rotate`, undefined, t),
        await srv.api.get<PlatformError>(`${M}/organisations/${other}/stats`, t),
        await srv.api.get<PlatformError>(`${M}/organisations/${other}/visitors`, t),
        await srv.api.get<PlatformError>(`${M}/organisations/${other}/visitors/c-1`, t),
        await srv.api.get<PlatformError>(`${M}/organisations/${other}/events`, t),
        await srv.api.get<PlatformError>(`${M}/organisations/${other}/deliveries`, t),
        await srv.api.get<PlatformError>(`${M}/organisations/${other}/learn-events`, t),
        await srv.api.get<PlatformError>(`${M}/integration?org_id=${other}`, t),
        await srv.api.post<PlatformError>(`${M}/integration`, webhookBody(other), t),
        await srv.api.post<PlatformError>('/v1/rest/integration', webhookBody(other), t),
      ];
      for (const r of orgForbidden) expect([r.status, r.body.code], r.text).to.deep.equal([403, 4030]);
    }
    for (const hook of [bobHook, platformHook]) {
      const t = { token: alice.token };
      const notFound = [
        await srv.api.get<PlatformError>(`${M}/integration/${hook}`, t),
        await srv.api.request<PlatformError>('PATCH', `${M}/integration/${hook}`, { ...t, body: { active: false } }),
        await srv.api.delete<PlatformError>(`${M}/integration/${hook}`, t),
        await srv.api.post<PlatformError>(`${M}/integration/${hook}/test`, undefined, t),
      ];
      for (const r of notFound) expect([r.status, r.body.code], r.text).to.deep.equal([404, 4040]);
      // PUT naming the other organisation's integration: refused on the organisation
      const put = await srv.api.put(`${M}/integration`, { ...webhookBody(alice.orgId), id: hook }, t);
      expect(put.status, put.text).to.be.oneOf([403, 404]);
    }
    const after = await srv.database.handle.db
      .selectFrom('integrations')
      .selectAll()
      .where('org_id', 'in', [bob.orgId, platformOrg])
      .orderBy('id')
      .execute();
    expect(after).to.deep.equal(before);
    // nor does the organisation list leak anything
    const list = await srv.api.get<BodyOf<'listOrganisations'>>(`${M}/organisations?q=${encodeURIComponent(bob.domain)}`, { token: alice.token });
    expect(list.body.items).to.deep.equal([]);
  });

  it('refuses the platform-only operation (registering merchants) with 403/4031', async () => {
    const r = await srv.api.post<PlatformError>(`${M}/users/register`, { email: 'x@shop.example', domain: 'x.shop.example' }, { token: alice.token });
    expect(r.status).to.equal(403);
    expect(r.body).to.include({ code: 4031, message: 'A merchant session cannot register merchants; log in with a platform account.' });
    const made = await srv.database.handle.db.selectFrom('users').select('id').where('email_key', '=', 'x@shop.example').execute();
    expect(made).to.deep.equal([]);
  });

  it('keeps the realms apart: merchant tokens only under merchant, platform tokens never there', async () => {
    // a merchant token under a platform's name, and a platform token under merchant
    expect((await srv.api.get(`/v1/rest/acme/organisations/${alice.orgId}`, { token: alice.token })).status).to.equal(401);
    expect((await srv.api.get(`${M}/organisations/${platformOrg}`, { token: platform.token })).status).to.equal(401);
    // a token signed with the server's own key, claiming the merchant realm for a platform account
    const forged = await srv.deps.tokens.sign({ userId: platform.userId, platform: 'merchant' });
    expect((await srv.api.get(`${M}/organisations/${platformOrg}`, { token: forged })).status).to.equal(401);
    // and a platform realm for a merchant
    const forged2 = await srv.deps.tokens.sign({ userId: (await userId(alice.email))!, platform: 'acme' });
    expect((await srv.api.get(`/v1/rest/acme/organisations/${alice.orgId}`, { token: forged2 })).status).to.equal(401);
  });

  it('logs in only the right person in the right realm (401/4011 otherwise)', async () => {
    const refused = [
      await login<PlatformError>('merchant', alice.email, 'wrong password!'),
      await login<PlatformError>('acme', alice.email, alice.password), // a merchant under a platform's name
      await login<PlatformError>('merchant', platform.email, platform.password), // a platform account under merchant
    ];
    for (const r of refused) expect([r.status, r.body.code]).to.deep.equal([401, 4011]);
    // a merchant registered by a platform has no password: managed by its platform, it cannot log in
    const m = await newMerchant(srv, platform);
    const r = await login('merchant', m.user.email, '');
    expect(r.status).to.be.oneOf([400, 401]);
    expect((await login('merchant', m.user.email, 'any password at all')).status).to.equal(401);
  });

  it('reserves the platform name: no platform account can be made under merchant', async () => {
    let err: unknown;
    try {
      await ensurePlatformAccount(srv.deps, { platform: 'merchant', email: 'ops@reserved.example', password: 'long enough pw', name: '' });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(AccountError);
    expect((err as Error).message).to.include('reserved');
  });

  async function userId(email: string) {
    const row = await srv.database.handle.db.selectFrom('users').select('id').where('email_key', '=', email.toLowerCase()).executeTakeFirst();
    return row?.id;
  }
});
