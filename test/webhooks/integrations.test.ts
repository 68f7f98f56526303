// Webhook integrations on both path forms (createIntegration, updateIntegration
// and their unscoped forms) and docs/design.md's integration responses and read endpoints: update (PUT), read and
// delete. Create (POST) is in integration-create.test.ts.
import { expect } from 'chai';
import { enqueueDeliveries } from '../../src/webhooks/outbox.repository.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, WEBHOOK_AUTH_TOKEN as TOKEN, webhookBody } from '../support/accounts.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';

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

  async function pendingDelivery(integrationId: number): Promise<number> {
    await db()
      .transaction()
      .execute((tx) =>
        enqueueDeliveries(tx, [
          { orgId, integrationId, kind: 'event', body: '{"medium":"event","contact":"a@example.com"}', contact: 'a@example.com' },
        ]),
      );
    const row = await db()
      .selectFrom('deliveries')
      .select('id')
      .where('integration_id', '=', integrationId)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async function deliveryStatus(id: number): Promise<string> {
    return (await db().selectFrom('deliveries').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
  }

  describe('update (PUT)', () => {
    it('answers 200 {code 2001, message OK, integration}, replacing every field with the values sent (a PUT)', async () => {
      const i = await newWebhook(srv, acme, orgId, { authToken: TOKEN, httpTimeout: '20' });
      const r = await srv.api.put<BodyOf<'updateIntegration'>>(
        path,
        webhookBody(
          orgId,
          { endpoint: 'https://hooks.example.com/v2', do_events: false, do_contacts: false, authToken: 'newtoken-0000-abcd' },
          { id: i.id, active: false },
        ),
        { token: acme.token },
      );
      expect(r.status).to.equal(200);
      expect(Object.keys(r.body).sort()).to.deep.equal(['code', 'integration', 'message']);
      expect(r.body).to.include({ code: 2001, message: 'OK' });
      const u = r.body.integration;
      expect(u).to.deep.include({
        id: i.id,
        org_id: orgId,
        active: false,
        type: 'WEBHOOK',
        signing_secret: i.signing_secret,
        created_at: i.created_at,
      });
      expect(u.data).to.deep.equal({
        endpoint: 'https://hooks.example.com/v2',
        authToken: '****abcd',
        httpTimeout: '10',
        do_events: false,
        do_contacts: false,
      });
      expect(Date.parse(u.modified_at)).to.be.at.least(Date.parse(i.modified_at as string));
      const row = await db().selectFrom('integrations').select('auth_token_enc').where('id', '=', i.id).executeTakeFirstOrThrow();
      expect(srv.deps.cipher.decrypt(row.auth_token_enc!)).to.equal('newtoken-0000-abcd');
    });

    it('clears authToken and resets httpTimeout to "10" when they are left out', async () => {
      const i = await newWebhook(srv, acme, orgId, { authToken: TOKEN, httpTimeout: '25' });
      const r = await srv.api.put<BodyOf<'updateIntegration'>>(path, webhookBody(orgId, {}, { id: i.id }), { token: acme.token });
      expect(r.status).to.equal(200);
      expect(r.body.integration.data).to.deep.equal({
        endpoint: 'https://hooks.example.com/trackway',
        httpTimeout: '10',
        do_events: true,
        do_contacts: true,
      });
      const row = await db()
        .selectFrom('integrations')
        .select(['auth_token_enc', 'auth_token_hint'])
        .where('id', '=', i.id)
        .executeTakeFirstOrThrow();
      expect(row).to.deep.equal({ auth_token_enc: null, auth_token_hint: null });
    });

    it('moves active from true to false and back, and keeps the signing secret', async () => {
      const i = await newWebhook(srv, acme, orgId);
      const off = await srv.api.put<BodyOf<'updateIntegration'>>(path, webhookBody(orgId, {}, { id: i.id, active: false }), { token: acme.token });
      expect(off.body.integration.active).to.equal(false);
      expect(await srv.deps.targets.forOrg(orgId)).to.deep.equal([]);
      const on = await srv.api.put<BodyOf<'updateIntegration'>>(path, webhookBody(orgId, {}, { id: i.id, active: true }), { token: acme.token });
      expect(on.body.integration.active).to.equal(true);
      expect(on.body.integration.signing_secret).to.equal(i.signing_secret);
      expect(await srv.deps.targets.forOrg(orgId)).to.deep.equal([{ id: i.id, doEvents: true, doContacts: true }]);
    });

    it('cancels pending deliveries when deactivated, and only then', async () => {
      const i = await newWebhook(srv, acme, orgId);
      const first = await pendingDelivery(i.id);
      await srv.api.put(path, webhookBody(orgId, { endpoint: 'https://hooks.example.com/other' }, { id: i.id }), { token: acme.token });
      expect(await deliveryStatus(first)).to.equal('pending');
      await srv.api.put(path, webhookBody(orgId, {}, { id: i.id, active: false }), { token: acme.token });
      expect(await deliveryStatus(first)).to.equal('cancelled');
    });

    it('works on the unscoped path /v1/rest/integration', async () => {
      const i = await newWebhook(srv, acme, orgId);
      const r = await srv.api.put<BodyOf<'updateIntegrationUnscoped'>>(
        '/v1/rest/integration',
        webhookBody(orgId, { httpTimeout: '5' }, { id: i.id, active: false }),
        {
          token: acme.token,
        },
      );
      expect(r.status).to.equal(200);
      expect(r.body).to.include({ code: 2001, message: 'OK' });
      expect(r.body.integration).to.deep.include({ id: i.id, active: false });
      expect(r.body.integration.data.httpTimeout).to.equal('5');
    });

    it('answers an unknown id with 404/4040, on both paths', async () => {
      for (const p of [path, '/v1/rest/integration']) {
        const r = await srv.api.put<PlatformError>(p, webhookBody(orgId, {}, { id: 987654321 }), { token: acme.token });
        expect(r.status).to.equal(404);
        expect(r.body.code).to.equal(4040);
      }
    });

    it('looks the id up within org_id: an integration cannot move to another organisation (404)', async () => {
      const i = await newWebhook(srv, acme, orgId);
      const otherOrg = (await newMerchant(srv, acme)).organisation.id;
      const r = await srv.api.put<PlatformError>(path, webhookBody(otherOrg, {}, { id: i.id }), { token: acme.token });
      expect(r.status).to.equal(404);
      expect(r.body.code).to.equal(4040);
      const row = await db().selectFrom('integrations').select('org_id').where('id', '=', i.id).executeTakeFirstOrThrow();
      expect(row.org_id).to.equal(orgId);
    });

    it('answers 403/4030 for an org_id not assigned to the caller', async () => {
      const i = await newWebhook(srv, acme, orgId);
      const r = await srv.api.put<PlatformError>(path, webhookBody(987654321, {}, { id: i.id }), { token: acme.token });
      expect(r.status).to.equal(403);
      expect(r.body.code).to.equal(4030);
    });

    it('requires the id and validates like create (400/4000)', async () => {
      const i = await newWebhook(srv, acme, orgId);
      for (const body of [
        webhookBody(orgId),
        webhookBody(orgId, { httpTimeout: '31' }, { id: i.id }),
        webhookBody(orgId, { endpoint: 'mailto:x@y.example' }, { id: i.id }),
        { ...webhookBody(orgId, {}, { id: i.id }), type: 'EMAIL' },
        webhookBody(orgId, {}, { id: 'seven' }),
      ]) {
        const r = await srv.api.put<PlatformError>(path, body, { token: acme.token });
        expect(r.status, JSON.stringify(body)).to.equal(400);
        expect(r.body.code).to.equal(4000);
      }
    });
  });

  describe('read and delete', () => {
    it('GET /integration/{id} answers the Integration, masked, with its signing secret', async () => {
      const i = await newWebhook(srv, acme, orgId, { authToken: TOKEN });
      const r = await srv.api.get(`${path}/${i.id}`, { token: acme.token });
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal(i);
    });

    it('GET /integration/{id} answers 404/4040 for an unknown id', async () => {
      const r = await srv.api.get<PlatformError>(`${path}/987654321`, { token: acme.token });
      expect(r.status).to.equal(404);
      expect(r.body.code).to.equal(4040);
    });

    it('lists an organisation oldest first with cursor pagination, without deleted ones', async () => {
      const made = [];
      for (let k = 0; k < 5; k++) made.push(await newWebhook(srv, acme, orgId, { endpoint: `https://hooks.example.com/${k}` }));
      await srv.api.delete(`${path}/${made[2]!.id}`, { token: acme.token });
      const ids: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = `${path}?org_id=${orgId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
        const r = await srv.api.get<BodyOf<'listIntegrations'>>(q, { token: acme.token });
        expect(r.status).to.equal(200);
        expect(Object.keys(r.body).sort()).to.deep.equal(['items', 'next_cursor']);
        expect(r.body.items.length).to.be.at.most(2);
        ids.push(...r.body.items.map((x) => x.id));
        cursor = r.body.next_cursor;
        pages++;
      } while (cursor);
      expect(ids).to.deep.equal([made[0]!.id, made[1]!.id, made[3]!.id, made[4]!.id]);
      expect(pages).to.equal(2);
      const all = await srv.api.get<BodyOf<'listIntegrations'>>(`${path}?org_id=${orgId}`, { token: acme.token });
      expect(all.body.items[0]).to.deep.equal(made[0]);
      expect(all.body.next_cursor).to.equal(null);
    });

    it('pages 50 by default, and takes limit 1 to 200 only', async () => {
      for (let k = 0; k < 51; k++) await srv.api.post(path, webhookBody(orgId), { token: acme.token });
      const first = await srv.api.get<BodyOf<'listIntegrations'>>(`${path}?org_id=${orgId}`, { token: acme.token });
      expect(first.body.items).to.have.length(50);
      expect(first.body.next_cursor).to.be.a('string');
      const second = await srv.api.get<BodyOf<'listIntegrations'>>(`${path}?org_id=${orgId}&cursor=${first.body.next_cursor}`, { token: acme.token });
      expect(second.body.items).to.have.length(1);
      expect(second.body.next_cursor).to.equal(null);
      const big = await srv.api.get<BodyOf<'listIntegrations'>>(`${path}?org_id=${orgId}&limit=200`, { token: acme.token });
      expect(big.body.items).to.have.length(51);
      for (const limit of ['0', '201', '-1', 'ten']) {
        const r = await srv.api.get<PlatformError>(`${path}?org_id=${orgId}&limit=${limit}`, { token: acme.token });
        expect(r.status, limit).to.equal(400);
        expect(r.body.code).to.equal(4000);
      }
    });

    it('refuses a bad cursor, or one made for another organisation, with 400/4000', async () => {
      for (let k = 0; k < 2; k++) await newWebhook(srv, acme, orgId);
      const page = await srv.api.get<BodyOf<'listIntegrations'>>(`${path}?org_id=${orgId}&limit=1`, { token: acme.token });
      const cursor = page.body.next_cursor as string;
      const otherOrg = (await newMerchant(srv, acme)).organisation.id;
      const forged = Buffer.from(JSON.stringify({ p: { id: 0 }, f: 'x' })).toString('base64url');
      for (const bad of ['garbage!', 'eyJub3QiOiJ2YWxpZCJ9', forged, cursor.slice(0, -2)]) {
        const r = await srv.api.get<PlatformError>(`${path}?org_id=${orgId}&cursor=${encodeURIComponent(bad)}`, { token: acme.token });
        expect(r.status, bad).to.equal(400);
        expect(r.body.code).to.equal(4000);
      }
      const moved = await srv.api.get(`${path}?org_id=${otherOrg}&cursor=${cursor}`, { token: acme.token });
      expect(moved.status).to.equal(400);
    });

    it('answers the list of an org_id not assigned to the caller with 403/4030, existing or not', async () => {
      const other = await newAccount(srv, 'acme');
      const foreign = (await newMerchant(srv, other)).organisation.id;
      for (const org of [foreign, 987654321]) {
        const r = await srv.api.get<PlatformError>(`${path}?org_id=${org}`, { token: acme.token });
        expect(r.status).to.equal(403);
        expect(r.body.code).to.equal(4030);
      }
      const missing = await srv.api.get(path, { token: acme.token });
      expect(missing.status).to.equal(400);
    });

    it('DELETE answers 204 without a body; then the integration is gone for every read and write (404)', async () => {
      const i = await newWebhook(srv, acme, orgId);
      const del = await srv.api.delete(`${path}/${i.id}`, { token: acme.token });
      expect(del.status).to.equal(204);
      expect(del.text).to.equal('');
      const again = await srv.api.delete<PlatformError>(`${path}/${i.id}`, { token: acme.token });
      expect(again.status).to.equal(404);
      expect(again.body.code).to.equal(4040);
      expect((await srv.api.get(`${path}/${i.id}`, { token: acme.token })).status).to.equal(404);
      expect((await srv.api.put(path, webhookBody(orgId, {}, { id: i.id }), { token: acme.token })).status).to.equal(404);
      expect((await srv.api.put('/v1/rest/integration', webhookBody(orgId, {}, { id: i.id }), { token: acme.token })).status).to.equal(404);
      const list = await srv.api.get<BodyOf<'listIntegrations'>>(`${path}?org_id=${orgId}`, { token: acme.token });
      expect(list.body.items.map((x) => x.id)).to.not.include(i.id);
    });

    it('DELETE cancels pending deliveries, keeps delivery history, and drops the integration from the targets', async () => {
      const i = await newWebhook(srv, acme, orgId);
      expect(await srv.deps.targets.forOrg(orgId)).to.have.length(1);
      const d = await pendingDelivery(i.id);
      await db().updateTable('deliveries').set({ status: 'delivered', next_attempt_at: null }).where('id', '=', d).execute();
      const p = await pendingDelivery(i.id);
      await srv.api.delete(`${path}/${i.id}`, { token: acme.token });
      expect(await deliveryStatus(p)).to.equal('cancelled');
      expect(await deliveryStatus(d)).to.equal('delivered');
      expect(await srv.deps.targets.forOrg(orgId)).to.deep.equal([]);
    });

    it('answers ids that are not positive safe integers like unknown ones', async () => {
      for (const id of ['0', '99999999999999999999', '9007199254740993']) {
        const r = await srv.api.get(`${path}/${id}`, { token: acme.token });
        expect([400, 404], id).to.include(r.status);
      }
      const huge = await srv.api.put(path, { ...webhookBody(orgId), id: 9007199254740993 }, { token: acme.token }); // eslint-disable-line no-loss-of-precision -- past 2^53 is the point
      expect([400, 404]).to.include(huge.status);
      const hugeOrg = await srv.api.post(path, webhookBody(9223372036854775807), { token: acme.token }); // eslint-disable-line no-loss-of-precision -- past 2^53 is the point
      expect([400, 403]).to.include(hugeOrg.status);
    });
  });
});
