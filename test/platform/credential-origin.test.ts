// Issue 12 point 5: "PATCH only data.endpoint to a server you control, then
// 'send test': the clear credential arrives there." A new endpoint on another
// origin (scheme, host, port) now drops the stored authToken unless the same
// request sends one. Proved with real receivers on 127.0.0.1 (two ports: two
// origins) and a running dispatcher: neither "send test" nor a real delivery
// carries an Authorization header to the new origin; a new path on the same
// origin keeps the credential.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type ReceivedRequest, TestReceiver } from '../support/receiver.ts';
import { type Account, newAccount, newMerchant, newWebhook } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

const TOKEN = 'merchant-credential-7f3a9c2e4b1d';

describe('a credential never reaches a new origin', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  let merchantHooks: TestReceiver;
  let attackerHooks: TestReceiver;

  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    account = await newAccount(srv);
    merchantHooks = await TestReceiver.start(() => ({ status: 204 }));
    attackerHooks = await TestReceiver.start(() => ({ status: 204 }));
  });
  after(async () => {
    await srv.stop();
    await merchantHooks.close();
    await attackerHooks.close();
  });

  const item = (id: number) => `/v1/rest/${account.platform}/integration/${id}`;
  const patch = (id: number, body: unknown) => srv.api.request<BodyOf<'patchIntegration'>>('PATCH', item(id), { body, token: account.token });
  const sendTest = (id: number) => srv.api.post<BodyOf<'testIntegration'>>(`${item(id)}/test`, undefined, { token: account.token });

  async function integration() {
    const org = (await newMerchant(srv, account)).organisation.id;
    const hook = await newWebhook(srv, account, org, { endpoint: merchantHooks.url, authToken: TOKEN, do_events: false, do_contacts: true });
    return { org, id: hook.id };
  }

  /** The next request the receiver gets after `from` requests. */
  async function nextRequest(r: TestReceiver, from: number, match: (q: ReceivedRequest) => boolean): Promise<ReceivedRequest> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const hit = r.requests.slice(from).find(match);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error('no matching request arrived');
      await new Promise((res) => setTimeout(res, 25));
    }
  }

  it('drops the stored authToken when PATCH moves the endpoint to another origin: no Authorization reaches it by "send test" or by a real delivery', async () => {
    const { org, id } = await integration();
    // before: the merchant's endpoint gets the credential
    const before = merchantHooks.requests.length;
    expect((await sendTest(id)).body.delivered).to.equal(true);
    expect(merchantHooks.requests[before]!.headers.authorization).to.equal(`Bearer ${TOKEN}`);

    // the attack: only the endpoint changes, to a server the attacker controls (another port: another origin)
    const moved = await patch(id, { data: { endpoint: attackerHooks.url } });
    expect(moved.status, moved.text).to.equal(200);
    expect(moved.body.integration.data.endpoint).to.equal(attackerHooks.url);
    expect(moved.body.integration.data).to.not.have.property('authToken');

    const seen = attackerHooks.requests.length;
    const test = await sendTest(id);
    expect(test.body.delivered).to.equal(true);
    const probe = attackerHooks.requests[seen]!;
    expect(probe.headers).to.not.have.property('authorization');

    // a real delivery: a visitor identifies, the contact match goes to the new endpoint, without the credential
    const id2 = await srv.api.get(`/jsv1/identify/${org}/r-origin/c-origin/${b64url({ email: 'origin.buyer@example.com' })}`);
    expect(id2.status).to.equal(200);
    const delivery = await nextRequest(attackerHooks, seen + 1, (q) => q.body.includes('origin.buyer@example.com'));
    expect(JSON.parse(delivery.body)).to.include({ medium: 'matched', contact: 'origin.buyer@example.com' });
    expect(delivery.headers).to.not.have.property('authorization');
    // the credential appears in no request the new origin ever got
    for (const q of attackerHooks.requests) {
      expect(JSON.stringify(q.headers)).to.not.include(TOKEN);
      expect(q.body).to.not.include(TOKEN);
    }

    // moving back does not bring the credential back: it is gone
    const back = await patch(id, { data: { endpoint: merchantHooks.url } });
    expect(back.body.integration.data).to.not.have.property('authToken');
  });

  it('keeps the credential for a new path on the same origin (scheme, host and port unchanged)', async () => {
    const { id } = await integration();
    const samePlace = `${merchantHooks.url.replace(/\/hook$/, '')}/v2/trackway?x=1`;
    const r = await patch(id, { data: { endpoint: samePlace } });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.integration.data.authToken).to.equal(`****${TOKEN.slice(-4)}`);
    const before = merchantHooks.requests.length;
    await sendTest(id);
    const got = merchantHooks.requests[before]!;
    expect(got.path).to.equal('/v2/trackway?x=1');
    expect(got.headers.authorization).to.equal(`Bearer ${TOKEN}`);
    // the origin compares as URLs do: the default port written out and the host's case change nothing
    const explicit = await patch(id, { data: { endpoint: 'https://Hooks.Example.com/a' } });
    expect(explicit.body.integration.data).to.not.have.property('authToken'); // http://127.0.0.1:port → https://hooks.example.com: moved
    await patch(id, { data: { authToken: TOKEN } });
    const same = await patch(id, { data: { endpoint: 'https://hooks.example.com:443/b' } });
    expect(same.body.integration.data.authToken).to.equal(`****${TOKEN.slice(-4)}`);
  });

  it('sends a credential given together with the new origin, to that origin', async () => {
    const { id } = await integration();
    const fresh = 'attacker-side-token-given-0042';
    const r = await patch(id, { data: { endpoint: attackerHooks.url, authToken: fresh } });
    expect(r.body.integration.data.authToken).to.equal('****0042');
    const before = attackerHooks.requests.length;
    await sendTest(id);
    expect(attackerHooks.requests[before]!.headers.authorization).to.equal(`Bearer ${fresh}`);
  });

  it('other changes (active, httpTimeout, do_events) keep the credential', async () => {
    const { id } = await integration();
    const r = await patch(id, { active: false, data: { httpTimeout: '12', do_events: true } });
    expect(r.body.integration.data.authToken).to.equal(`****${TOKEN.slice(-4)}`);
    const before = merchantHooks.requests.length;
    await sendTest(id);
    expect(merchantHooks.requests[before]!.headers.authorization).to.equal(`Bearer ${TOKEN}`);
  });
});
