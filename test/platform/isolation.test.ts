// Tenant isolation matrix: every platform endpoint, called
// with the token of another platform account (one of the same platform, one
// of another platform) against the first account's resources: no read, no
// write, no leak.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, webhookBody } from '../support/accounts.ts';
import { errorBody, type BodyOf, type PlatformError } from '../support/client.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

interface Tenant {
  account: Account;
  orgId: OrgId;
  integrationId: number;
  domain: string;
  token: string;
  secret: string;
}

describe('tenant isolation matrix (platform API)', () => {
  let srv: TestServer;
  let victim: Tenant;
  let victimSecrets: string[];
  let victimCursor: string | null;

  async function tenant(platform: string): Promise<Tenant> {
    const account = await newAccount(srv, platform);
    const m = await newMerchant(srv, account, { organisation_name: `private shop of ${account.email}` });
    const i = await newWebhook(srv, account, m.organisation.id, {
      endpoint: `https://hooks.${m.organisation.domain}/private-endpoint`,
      authToken: `secret-token-of-${m.organisation.id}-XYZW`,
    });
    return {
      account,
      orgId: m.organisation.id,
      integrationId: i.id,
      domain: m.organisation.domain,
      token: m.organisation.token,
      secret: i.signing_secret,
    };
  }

  const snapshot = async () => ({
    integrations: await srv.database.handle.db.selectFrom('integrations').selectAll().where('org_id', '=', victim.orgId).orderBy('id').execute(),
    organisation: await srv.database.handle.db.selectFrom('organisations').selectAll().where('id', '=', victim.orgId).execute(),
    members: await srv.database.handle.db
      .selectFrom('organisation_members')
      .selectAll()
      .where('org_id', '=', victim.orgId)
      .orderBy('user_id')
      .execute(),
    deliveries: await srv.database.handle.db.selectFrom('deliveries').selectAll().where('org_id', '=', victim.orgId).orderBy('id').execute(),
  });

  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    const v = await tenant('acme');
    victim = v;
    // a second integration, so that the victim's list has a next page
    await newWebhook(srv, v.account, v.orgId);
    await srv.database.handle.db
      .insertInto('deliveries')
      .values({ org_id: v.orgId, integration_id: v.integrationId, kind: 'event', body: '{}', next_attempt_at: new Date() })
      .execute();
    victimSecrets = [v.domain, v.token, v.secret, `secret-token-of-${v.orgId}`, `private shop of ${v.account.email}`, v.account.email];
    const page = await srv.api.get<BodyOf<'listIntegrations'>>(`/v1/rest/acme/integration?org_id=${v.orgId}&limit=1`, { token: v.account.token });
    victimCursor = page.body.next_cursor;
    expect(victimCursor).to.be.a('string');
  });
  after(() => srv.stop());

  for (const attackerPlatform of ['acme', 'globex']) {
    describe(`an account of platform ${attackerPlatform}`, () => {
      let attacker: Tenant;
      before(async () => {
        attacker = await tenant(attackerPlatform);
      });

      it('can neither read, write nor see anything of the other account, on its own platform path', async () => {
        const before = await snapshot();
        const p = `/v1/rest/${attackerPlatform}`;
        const v = victim;
        const a = attacker;
        const token = a.account.token;
        const probes: { name: string; method: string; path: string; body?: unknown; status: number; code: number }[] = [
          {
            name: 'loginPlatformUser',
            method: 'POST',
            path: `${p}/users/login`,
            body: { email: v.account.email, password: 'a guess' },
            status: 401,
            code: 4011,
          },
          {
            name: 'registerClientUser (their domain)',
            method: 'POST',
            path: `${p}/users/register`,
            body: { email: `grab-${a.orgId}@attacker.example`, domain: `https://www.${v.domain}/` },
            status: 409,
            code: 40010,
          },
          { name: 'listOrganisations', method: 'GET', path: `${p}/organisations`, status: 200, code: 0 },
          {
            name: 'listOrganisations q',
            method: 'GET',
            path: `${p}/organisations?q=${encodeURIComponent(v.account.platform)}`,
            status: 200,
            code: 0,
          },
          { name: 'getOrganisation', method: 'GET', path: `${p}/organisations/${v.orgId}`, status: 403, code: 4030 },
          { name: 'listIntegrations', method: 'GET', path: `${p}/integration?org_id=${v.orgId}`, status: 403, code: 4030 },
          {
            name: 'listIntegrations with their cursor',
            method: 'GET',
            path: `${p}/integration?org_id=${v.orgId}&cursor=${victimCursor}`,
            status: 403,
            code: 4030,
          },
          {
            name: 'listIntegrations own org, their cursor',
            method: 'GET',
            path: `${p}/integration?org_id=${a.orgId}&cursor=${victimCursor}`,
            status: 400,
            code: 4000,
          },
          { name: 'getIntegration', method: 'GET', path: `${p}/integration/${v.integrationId}`, status: 404, code: 4040 },
          { name: 'deleteIntegration', method: 'DELETE', path: `${p}/integration/${v.integrationId}`, status: 404, code: 4040 },
          { name: 'createIntegration', method: 'POST', path: `${p}/integration`, body: webhookBody(v.orgId), status: 403, code: 4030 },
          { name: 'createIntegrationUnscoped', method: 'POST', path: '/v1/rest/integration', body: webhookBody(v.orgId), status: 403, code: 4030 },
          {
            name: 'updateIntegration',
            method: 'PUT',
            path: `${p}/integration`,
            body: webhookBody(v.orgId, {}, { id: v.integrationId, active: false }),
            status: 403,
            code: 4030,
          },
          {
            name: 'updateIntegrationUnscoped',
            method: 'PUT',
            path: '/v1/rest/integration',
            body: webhookBody(v.orgId, {}, { id: v.integrationId, active: false }),
            status: 403,
            code: 4030,
          },
          {
            name: 'updateIntegration into own org',
            method: 'PUT',
            path: `${p}/integration`,
            body: webhookBody(a.orgId, {}, { id: v.integrationId, active: false }),
            status: 404,
            code: 4040,
          },
          {
            name: 'updateIntegrationUnscoped into own org',
            method: 'PUT',
            path: '/v1/rest/integration',
            body: webhookBody(a.orgId, {}, { id: v.integrationId, active: false }),
            status: 404,
            code: 4040,
          },
        ];
        const texts: string[] = [];
        for (const probe of probes) {
          // a refusal, or (listOrganisations) the caller's own list: either body, field by field
          const r = await srv.api.request<Partial<PlatformError & BodyOf<'listOrganisations'>>>(probe.method, probe.path, {
            body: probe.body,
            token,
          });
          expect(r.status, `${probe.name}: ${r.text}`).to.equal(probe.status);
          if (probe.code) expect(r.body.code, probe.name).to.equal(probe.code);
          texts.push(r.text);
          if (probe.name.startsWith('listOrganisations')) {
            expect(
              r.body.items!.map((o) => o.id),
              probe.name,
            ).to.not.include(v.orgId);
          }
        }
        const all = texts.join('\n');
        for (const secret of victimSecrets) expect(all, secret).to.not.include(secret);
        // a missing and a foreign resource answer alike: nothing tells them apart
        const missingOrg = await srv.api.get(`${p}/organisations/987654321`, { token });
        const foreignOrg = await srv.api.get(`${p}/organisations/${v.orgId}`, { token });
        expect(errorBody(foreignOrg)).to.deep.equal(errorBody(missingOrg));
        const missingInt = await srv.api.get(`${p}/integration/987654321`, { token });
        const foreignInt = await srv.api.get(`${p}/integration/${v.integrationId}`, { token });
        expect(errorBody(foreignInt)).to.deep.equal(errorBody(missingInt));
        expect(await snapshot()).to.deep.equal(before);
      });

      if (attackerPlatform !== 'acme') {
        it("is refused (401/4010) on the other platform's paths", async () => {
          const token = attacker.account.token;
          const p = `/v1/rest/${victim.account.platform}`;
          const before = await snapshot();
          const probes: [string, string, unknown?][] = [
            ['POST', `${p}/users/register`, { email: 'grab@victim.example', domain: 'grab.victim.example' }],
            ['GET', `${p}/organisations`],
            ['GET', `${p}/organisations/${victim.orgId}`],
            ['GET', `${p}/integration?org_id=${victim.orgId}`],
            ['GET', `${p}/integration/${victim.integrationId}`],
            ['DELETE', `${p}/integration/${victim.integrationId}`],
            ['POST', `${p}/integration`, webhookBody(victim.orgId)],
            ['PUT', `${p}/integration`, webhookBody(victim.orgId, {}, { id: victim.integrationId, active: false })],
          ];
          for (const [method, path, body] of probes) {
            const r = await srv.api.request<PlatformError>(method, path, { body, token });
            expect(r.status, `${method} ${path}`).to.equal(401);
            expect(r.body.code).to.equal(4010);
            for (const secret of victimSecrets) expect(r.text).to.not.include(secret);
          }
          expect(await snapshot()).to.deep.equal(before);
        });
      }

      it('leaves the other account fully working and unchanged', async () => {
        const t = victim.account.token;
        const org = await srv.api.get(`/v1/rest/acme/organisations/${victim.orgId}`, { token: t });
        expect(org.status).to.equal(200);
        const i = await srv.api.get<BodyOf<'getIntegration'>>(`/v1/rest/acme/integration/${victim.integrationId}`, { token: t });
        expect(i.status).to.equal(200);
        expect(i.body.active).to.equal(true);
        const pending = await srv.database.handle.db.selectFrom('deliveries').select('status').where('org_id', '=', victim.orgId).execute();
        expect(pending.map((d) => d.status)).to.deep.equal(['pending']);
      });
    });
  }
});
