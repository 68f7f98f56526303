// Webhook integrations on both path forms (createIntegration, updateIntegration
// and their unscoped forms) and docs/design.md's integration responses: create (POST), with the auth token masked,
// encrypted at rest and never echoed, and bad input refused.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, WEBHOOK_AUTH_TOKEN as TOKEN, webhookBody } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('webhook integrations (createIntegration, updateIntegration)', () => {
  let srv: TestServer;
  let acme: Account;
  let orgId: OrgId;

  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    acme = await newAccount(srv, 'acme');
  });
  beforeEach(async () => {
    orgId = (await newMerchant(srv, acme)).organisation.id;
  });
  after(() => srv.stop());

  const path = '/v1/rest/acme/integration';
  const db = () => srv.database.handle.db;
  describe('create (POST)', () => {
    it('answers 201 {code 2011, message Created, integration} with every field', async () => {
      const r = await srv.api.post<BodyOf<'createIntegration'>>(path, webhookBody(orgId, { authToken: TOKEN, httpTimeout: '15' }), {
        token: acme.token,
      });
      expect(r.status).to.equal(201);
      expect(Object.keys(r.body).sort()).to.deep.equal(['code', 'integration', 'message']);
      expect(r.body).to.include({ code: 2011, message: 'Created' });
      const i = r.body.integration;
      // every integration answer carries `health`
      expect(Object.keys(i).sort()).to.deep.equal([
        'active',
        'created_at',
        'data',
        'health',
        'id',
        'modified_at',
        'org_id',
        'signing_secret',
        'type',
      ]);
      expect(i.health).to.deep.equal({
        state: 'healthy',
        consecutive_failures: 0,
        failing_since: null,
        last_error: null,
        paused_until: null,
        disabled_at: null,
        disabled_reason: null,
      });
      expect(i).to.deep.include({ org_id: orgId, active: true, type: 'WEBHOOK' });
      expect(i.data).to.deep.equal({
        endpoint: 'https://hooks.example.com/trackway',
        authToken: '****9f3a',
        httpTimeout: '15',
        do_events: true,
        do_contacts: true,
      });
      expect(i.created_at).to.match(ISO);
      expect(i.modified_at).to.equal(i.created_at);
    });

    it('generates a signing secret: whsec_ + base64 of 32 random bytes, different per integration', async () => {
      const a = await newWebhook(srv, acme, orgId);
      const b = await newWebhook(srv, acme, orgId);
      for (const s of [a.signing_secret, b.signing_secret]) {
        expect(s).to.match(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
        expect(Buffer.from(s.slice(6), 'base64')).to.have.length(32);
      }
      expect(a.signing_secret).to.not.equal(b.signing_secret);
    });

    it('defaults httpTimeout to "10" and leaves authToken out when none is sent', async () => {
      const i = await newWebhook(srv, acme, orgId, { do_events: false });
      expect(i.data).to.deep.equal({ endpoint: 'https://hooks.example.com/trackway', httpTimeout: '10', do_events: false, do_contacts: true });
    });

    it('masks authToken as **** + its last 4 characters from 12 characters on, and as **** below', async () => {
      const cases: [string, string][] = [
        ['abcdefghijkl', '****ijkl'],
        ['abcdefghijk', '****'],
        ['short', '****'],
        ['x', '****'],
        [TOKEN, '****9f3a'],
      ];
      for (const [token, masked] of cases) {
        const i = await newWebhook(srv, acme, orgId, { authToken: token });
        expect((i.data as { authToken: string }).authToken, token).to.equal(masked);
        const read = await srv.api.get<BodyOf<'getIntegration'>>(`${path}/${i.id}`, { token: acme.token });
        expect(read.body.data.authToken).to.equal(masked);
        if (token.length >= 5) expect(read.text).to.not.include(token);
      }
    });

    it('never returns the authToken in clear, from any endpoint', async () => {
      const created = await srv.api.post<BodyOf<'createIntegration'>>(path, webhookBody(orgId, { authToken: TOKEN }), { token: acme.token });
      expect(created.text).to.not.include(TOKEN);
      const id = created.body.integration.id;
      const updated = await srv.api.put(path, webhookBody(orgId, { authToken: TOKEN }, { id }), { token: acme.token });
      const unscoped = await srv.api.put('/v1/rest/integration', webhookBody(orgId, { authToken: TOKEN }, { id }), { token: acme.token });
      const one = await srv.api.get(`${path}/${id}`, { token: acme.token });
      const list = await srv.api.get(`${path}?org_id=${orgId}`, { token: acme.token });
      for (const r of [updated, unscoped, one, list]) {
        expect(r.status).to.equal(200);
        expect(r.text).to.not.include(TOKEN);
        expect(r.text).to.include('****9f3a');
      }
    });

    it('encrypts authToken and the signing secret at rest (AES-256-GCM with the configured key)', async () => {
      const i = await newWebhook(srv, acme, orgId, { authToken: TOKEN });
      const row = await db().selectFrom('integrations').selectAll().where('id', '=', i.id).executeTakeFirstOrThrow();
      const everything = JSON.stringify(row);
      expect(everything).to.not.include(TOKEN);
      expect(everything).to.not.include(i.signing_secret.slice(6));
      expect(row.auth_token_enc).to.be.a('string').and.not.equal(TOKEN);
      expect(row.auth_token_hint).to.equal('****9f3a');
      expect(srv.deps.cipher.decrypt(row.auth_token_enc!)).to.equal(TOKEN);
      expect(srv.deps.cipher.decrypt(row.signing_secret_enc)).to.equal(i.signing_secret);
      // sealed freshly each time: the same token never gives the same ciphertext
      const j = await newWebhook(srv, acme, orgId, { authToken: TOKEN });
      const row2 = await db().selectFrom('integrations').select('auth_token_enc').where('id', '=', j.id).executeTakeFirstOrThrow();
      expect(row2.auth_token_enc).to.not.equal(row.auth_token_enc);
    });

    it('works on the unscoped path /v1/rest/integration, taking the platform from the token', async () => {
      const r = await srv.api.post<BodyOf<'createIntegrationUnscoped'>>('/v1/rest/integration', webhookBody(orgId), { token: acme.token });
      expect(r.status).to.equal(201);
      expect(r.body).to.include({ code: 2011, message: 'Created' });
      expect(r.body.integration.org_id).to.equal(orgId);
      const read = await srv.api.get(`${path}/${r.body.integration.id}`, { token: acme.token });
      expect(read.status).to.equal(200);
    });

    it('answers 403/4030 for an organisation not assigned to the caller, whether or not it exists', async () => {
      const other = await newAccount(srv, 'acme');
      const foreign = (await newMerchant(srv, other)).organisation.id;
      for (const org of [foreign, 987654321]) {
        for (const p of [path, '/v1/rest/integration']) {
          const r = await srv.api.post<PlatformError>(p, webhookBody(org), { token: acme.token });
          expect(r.status).to.equal(403);
          expect(r.body.code).to.equal(4030);
        }
      }
      const count = await db().selectFrom('integrations').select('id').where('org_id', '=', foreign).execute();
      expect(count).to.have.length(0);
    });

    it('validates type, endpoint, httpTimeout, booleans and unknown fields (400/4000)', async () => {
      const bad: unknown[] = [
        { ...webhookBody(orgId), type: 'SLACK' },
        { ...webhookBody(orgId), type: 'webhook' },
        webhookBody(orgId, { endpoint: 'ftp://hooks.example.com/x' }),
        webhookBody(orgId, { endpoint: '/relative/path' }),
        webhookBody(orgId, { endpoint: 'hooks.example.com' }),
        webhookBody(orgId, { endpoint: 'javascript:alert(1)' }),
        webhookBody(orgId, { endpoint: 'http://' }),
        webhookBody(orgId, { endpoint: `https://example.com/${'a'.repeat(2100)}` }),
        webhookBody(orgId, { httpTimeout: '0' }),
        webhookBody(orgId, { httpTimeout: '31' }),
        webhookBody(orgId, { httpTimeout: '010' }),
        webhookBody(orgId, { httpTimeout: '5s' }),
        webhookBody(orgId, { httpTimeout: 10 }),
        webhookBody(orgId, { do_events: 'true' }),
        webhookBody(orgId, { do_contacts: 1 }),
        webhookBody(orgId, { authToken: '' }),
        webhookBody(orgId, { authToken: 'has space' }),
        webhookBody(orgId, { authToken: 'line\nbreak' }),
        webhookBody(orgId, { authToken: 7 }),
        webhookBody(orgId, { extra: 1 }),
        { ...webhookBody(orgId), active: 'yes' },
        { ...webhookBody(orgId), id: 5 },
        { ...webhookBody(orgId), org_id: '1' },
        { ...webhookBody(orgId), org_id: 0 },
        { active: true, type: 'WEBHOOK', data: webhookBody(orgId).data },
        { org_id: orgId, active: true, type: 'WEBHOOK' },
        { org_id: orgId, active: true, type: 'WEBHOOK', data: { endpoint: 'https://x.example' } },
      ];
      for (const body of bad) {
        const r = await srv.api.post<PlatformError>(path, body, { token: acme.token });
        expect(r.status, JSON.stringify(body).slice(0, 200)).to.equal(400);
        expect(r.body.code).to.equal(4000);
        expect(r.body.errors).to.be.an('array').that.is.not.empty;
      }
      for (const httpTimeout of ['1', '9', '10', '29', '30']) {
        const r = await srv.api.post<BodyOf<'createIntegration'>>(path, webhookBody(orgId, { httpTimeout }), { token: acme.token });
        expect(r.status, httpTimeout).to.equal(201);
        expect(r.body.integration.data.httpTimeout).to.equal(httpTimeout);
      }
      const plainHttp = await srv.api.post(path, webhookBody(orgId, { endpoint: 'http://hooks.example.com:8080/in?x=1' }), { token: acme.token });
      expect(plainHttp.status).to.equal(201);
    });

    it('announces the change: the targets cache sees a new integration at once', async () => {
      expect(await srv.deps.targets.forOrg(orgId)).to.deep.equal([]);
      const i = await newWebhook(srv, acme, orgId, { do_events: false });
      expect(await srv.deps.targets.forOrg(orgId)).to.deep.equal([{ id: i.id, doEvents: false, doContacts: true }]);
    });
  });
});
