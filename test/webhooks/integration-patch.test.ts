// patchIntegration (PATCH .../integration/{id}): only the fields sent change;
// the stored auth token survives unless replaced or removed, which is what
// lets the dashboard pause and edit integrations whose token it never sees.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { enqueue, matchedBody } from '../support/webhook-fixtures.ts';
import { type Account, newAccount, newMerchant, newWebhook } from '../support/accounts.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';

const TOKEN = 'tok_0123456789abcdef';

describe('patchIntegration', () => {
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;
  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    account = await newAccount(srv);
    receiver = await TestReceiver.start(() => ({ status: 200, body: 'ok' }));
  });
  after(async () => {
    await receiver.close();
    await srv.stop();
  });

  const item = (id: number, platform = account.platform) => `/v1/rest/${platform}/integration/${id}`;

  async function integration(data: Record<string, unknown> = {}) {
    const org = (await newMerchant(srv, account)).organisation.id;
    return newWebhook(srv, account, org, { endpoint: receiver.url, authToken: TOKEN, httpTimeout: '7', do_events: false, ...data });
  }

  it('deactivates and reactivates, keeping every other field and the credential', async () => {
    const made = await integration();
    const off = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', item(made.id), { body: { active: false }, token: account.token });
    expect(off.status, off.text).to.equal(200);
    expect(off.body).to.include({ code: 2001, message: 'OK' });
    const { modified_at: _m1, active: _a1, ...rest } = made as Record<string, unknown>;
    const { modified_at: _m2, active, ...after } = off.body.integration;
    expect(active).to.equal(false);
    expect(after).to.deep.equal(rest);
    expect(after.data.authToken).to.equal('****cdef');

    const on = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', item(made.id), { body: { active: true }, token: account.token });
    expect(on.body.integration.active).to.equal(true);

    // the clear token was kept: a test delivery still sends it
    const before = receiver.requests.length;
    const test = await srv.api.post<BodyOf<'testIntegration'>>(`${item(made.id)}/test`, undefined, { token: account.token });
    expect(test.status, test.text).to.equal(200);
    expect(test.body.delivered).to.equal(true);
    expect(receiver.requests[before]!.headers.authorization).to.equal(`Bearer ${TOKEN}`);
  });

  it('changes the data fields sent and keeps the others', async () => {
    const made = await integration();
    const r = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', item(made.id), {
      body: { data: { endpoint: 'https://hooks.example.net/v2', httpTimeout: '20', do_events: true } },
      token: account.token,
    });
    expect(r.status, r.text).to.equal(200);
    // the endpoint moved to another origin, so the stored credential is dropped
    // (test/platform/credential-origin.test.ts); every other field left out is kept
    expect(r.body.integration.data).to.deep.equal({
      endpoint: 'https://hooks.example.net/v2',
      httpTimeout: '20',
      do_events: true,
      do_contacts: true,
    });
    expect(r.body.integration.active).to.equal(true);
    const read = await srv.api.get<BodyOf<'getIntegration'>>(item(made.id), { token: account.token });
    expect(read.body).to.deep.equal(r.body.integration);
  });

  it('replaces the credential, or removes it with null', async () => {
    const made = await integration();
    const replaced = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', item(made.id), {
      body: { data: { authToken: 'another-secret-token-9876' } },
      token: account.token,
    });
    expect(replaced.body.integration.data.authToken).to.equal('****9876');
    const removed = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', item(made.id), {
      body: { data: { authToken: null } },
      token: account.token,
    });
    expect(removed.status, removed.text).to.equal(200);
    expect(removed.body.integration.data).to.not.have.property('authToken');
    const before = receiver.requests.length;
    await srv.api.post(`${item(made.id)}/test`, undefined, { token: account.token });
    expect(receiver.requests[before]!.headers).to.not.have.property('authorization');
  });

  it('cancels pending deliveries when it deactivates', async () => {
    const made = await integration();
    const [id] = await enqueue(srv.deps.db, { id: made.id, orgId: made.org_id, signingSecret: made.signing_secret }, [
      { kind: 'matched', body: matchedBody(made.org_id) },
    ]);
    await srv.api.request('PATCH', item(made.id), { body: { active: false }, token: account.token });
    const d = await srv.api.get<BodyOf<'getDelivery'>>(`/v1/rest/${account.platform}/deliveries/${id}`, { token: account.token });
    expect(d.status, d.text).to.equal(200);
    expect(d.body.status).to.equal('cancelled');
  });

  it('rejects an empty or invalid change with 400 and changes nothing', async () => {
    const made = await integration();
    for (const body of [{}, { data: { endpoint: 'ftp://hooks.example.com/' } }, { data: { httpTimeout: '31' } }, { name: 'x' }, { active: 'no' }]) {
      const r = await srv.api.request<PlatformError>('PATCH', item(made.id), { body, token: account.token });
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.code).to.equal(4000);
    }
    const read = await srv.api.get(item(made.id), { token: account.token });
    expect(read.body).to.deep.equal(made);
  });

  it('answers 404 for an integration of another account, a deleted one, or none; 401 without a token', async () => {
    const made = await integration();
    const stranger = await newAccount(srv, 'rival');
    const foreign = await srv.api.request<PlatformError>('PATCH', item(made.id, stranger.platform), {
      body: { active: false },
      token: stranger.token,
    });
    expect(foreign.status).to.equal(404);
    expect(foreign.body.code).to.equal(4040);
    expect((await srv.api.get<BodyOf<'getIntegration'>>(item(made.id), { token: account.token })).body.active).to.equal(true);

    expect((await srv.api.request('PATCH', item(987654321), { body: { active: false }, token: account.token })).status).to.equal(404);
    expect((await srv.api.delete(item(made.id), { token: account.token })).status).to.equal(204);
    expect((await srv.api.request('PATCH', item(made.id), { body: { active: true }, token: account.token })).status).to.equal(404);
    const anonymous = await srv.api.request('PATCH', item(made.id), { body: { active: true } });
    expect(anonymous.status).to.equal(401);
  });
});
