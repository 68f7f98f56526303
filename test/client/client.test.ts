// The official client (`trackway/client`, src/client/ and generated/client.ts)
// drives the README's walkthrough against a real server: a platform account
// logs in, registers a merchant, creates an integration pointing at a real
// receiver on 127.0.0.1; a visitor's events and identify go through the
// client's tracking helpers (no corex_id, no hand-made base64); the receiver
// gets the `matched` notification and verifies it with `verifyWebhook`, and
// a tampered body fails. Every answer is checked against the contract (the
// client's `fetch` runs test/support/contract.ts on it).
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import {
  type TrackwayClient,
  WebhookVerificationError,
  createTrackwayClient,
  encodeIdentifyPayload,
  eventPathParams,
  isTestDelivery,
  operations,
  verifyWebhook,
  visitorCalls,
} from '../../src/client/index.ts';
import { ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import { PASSWORD, unique } from '../support/accounts.ts';
import { checkResponse } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type ReceivedRequest, TestReceiver } from '../support/receiver.ts';

/** fetch that checks every answer against the contract before the client sees it */
async function checkedFetch(request: Request): Promise<Response> {
  const res = await fetch(request);
  const text = await res.clone().text();
  const type = res.headers.get('content-type') ?? '';
  const body: unknown = type.startsWith('application/json') && text.length > 0 ? JSON.parse(text) : text;
  const url = new URL(request.url);
  checkResponse(request.method, url.pathname + url.search, { status: res.status, headers: res.headers, body, text });
  return res;
}

const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body) as Record<string, unknown>;

describe('the official TypeScript client (trackway/client)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let tw: TrackwayClient;

  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    tw = createTrackwayClient({ baseUrl: srv.url, fetch: checkedFetch });
  });
  after(async () => {
    await receiver?.close();
    await srv?.stop();
  });

  it('has a method per operation of the contract, named after its operationId', () => {
    expect(Object.keys(operations)).to.include.members([
      'loginPlatformUser',
      'registerClientUser',
      'createIntegration',
      'identifyVisitor',
      'recordBuyEvent',
    ]);
    for (const id of Object.keys(operations)) expect(tw, id).to.have.property(id).that.is.a('function');
    expect(operations.identifyVisitor).to.deep.equal({ method: 'GET', path: '/jsv1/identify/{org_id}/{roaming_id}/{core_id}/{payload}' });
  });

  it('encodes the identify payload as the tracker does: base64url UTF-8 JSON, trimmed, without padding', () => {
    const encoded = encodeIdentifyPayload({ email: '  Zoë@Example.com ', name: 'Zoë Ŝ', phone: '' });
    expect(encoded).to.match(/^[A-Za-z0-9_-]+$/);
    expect(JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'))).to.deep.equal({ email: 'Zoë@Example.com', name: 'Zoë Ŝ' });
    expect(() => encodeIdentifyPayload({ email: ' ', name: '' })).to.throw(TypeError);
    expect(eventPathParams({ org_id: 1, roaming_id: 'r', core_id: 'c' }).corex_id).to.equal('null');
    expect(eventPathParams({ org_id: 1, roaming_id: 'r', core_id: 'c', corex_id: null }).corex_id).to.equal('null');
    expect(eventPathParams({ org_id: 1, roaming_id: 'r', core_id: 'c', corex_id: 'cust-7' }).corex_id).to.equal('cust-7');
  });

  it('runs the walkthrough: log in, register, integrate, track, identify, and a verified contact match arrives', async () => {
    const platform_name = 'acme';
    const email = `${unique('ops')}@platform.example`;
    await ensurePlatformAccount(srv.deps, { platform: platform_name, email, password: PASSWORD, name: 'Platform Ops' });

    // 1. log in, by operationId; the token goes on every later request
    const login = await tw.loginPlatformUser({ params: { path: { platform_name } }, body: { email, password: PASSWORD } });
    expect(login.response.status).to.equal(200);
    tw.setToken(login.data!.bearer_token);

    // 2. a merchant and its organisation
    const shop = `${unique('shop')}.example.com`;
    const registered = await tw.registerClientUser({
      params: { path: { platform_name } },
      body: { email: `jane@${shop}`, name: 'Jane Doe', domain: shop, organisation_name: 'Jane Linen' },
    });
    expect(registered.response.status, JSON.stringify(registered.error)).to.equal(201);
    const org_id = registered.data!.organisation.id;

    // 3. an integration pointing at the receiver, by path (openapi-fetch's own form)
    const created = await tw.POST('/v1/rest/{platform_name}/integration', {
      params: { path: { platform_name } },
      body: { org_id, active: true, type: 'WEBHOOK', data: { endpoint: receiver.url, httpTimeout: '10', do_events: true, do_contacts: true } },
    });
    expect(created.response.status, JSON.stringify(created.error)).to.equal(201);
    const secret = created.data!.integration.signing_secret;
    expect(secret).to.match(/^whsec_/);

    // 4. a visitor without a corex_id: the helpers send the path's `null`, and encode the identify payload
    const visitor = visitorCalls(tw, { org_id, roaming_id: 'r-1', core_id: unique('c-') });
    const product = `https://${shop}/products/linen-shirt`;
    const viewed = await visitor.track('productview', { product_id: 42, price: 19.9, product_url: product });
    expect(viewed.response.status).to.equal(202);
    expect(viewed.data).to.deep.equal({ status: 'accepted' });
    const carted = await visitor.track('updatecart', { product_id: 42, cart_url: `https://${shop}/cart`, line_items: [], cart_value: 19.9 });
    expect(carted.response.status).to.equal(202);
    const identified = await visitor.identify({ email: ' Buyer@Example.com ', name: 'Bo Büyer' });
    expect(identified.response.status).to.equal(200);
    expect(identified.data).to.deep.equal({ core_id: visitor.ids.core_id });
    // a bad event body is the contract's typed error, not an exception
    const refused = await tw.recordBuyEvent({
      params: { path: eventPathParams({ org_id: org_id + 1_000_000, roaming_id: 'r-1', core_id: 'c-x' }) },
      body: { order_id: 'o-1' },
    });
    expect(refused.response.status).to.be.within(400, 499);
    expect(refused.error).to.have.property('error');

    // 5. the receiver gets the contact match, and it verifies with the integration's secret
    let req: ReceivedRequest | undefined;
    for (let n = 1; !req; n++) req = (await receiver.waitFor(n, 30_000)).find((r) => bodyOf(r).medium === 'matched');
    const note = verifyWebhook(secret, req.headers, req.body);
    expect(note).to.include({ medium: 'matched', contact: 'buyer@example.com', type: 'EMAIL', org_id: String(org_id) });
    if (note.medium !== 'matched') throw new Error('narrowed by medium');
    expect(note.visitor).to.deep.equal({ core_id: visitor.ids.core_id, roaming_id: 'r-1', corex_id: null });
    expect(note.last_view).to.deep.equal([product]);
    expect(note.last_addtocart).to.equal(product);
    expect(isTestDelivery(req.headers, req.body)).to.equal(false);
    // the same bytes, with fetch's Headers, and as a Buffer
    expect(verifyWebhook(secret, new Headers(req.headers as Record<string, string>), Buffer.from(req.body))).to.deep.equal(note);
    // and what the standardwebhooks package accepts, ours accepts
    expect(new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).to.deep.equal(note);

    // a tampered body, another secret, a replay from 6 minutes ago, a missing header: refused, each for its reason
    const refusedFor = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        expect(e).to.be.instanceOf(WebhookVerificationError);
        return (e as WebhookVerificationError).reason;
      }
      throw new Error('verifyWebhook accepted it');
    };
    expect(refusedFor(() => verifyWebhook(secret, req.headers, req.body.replace('buyer@example.com', 'other@example.com')))).to.equal(
      'invalid_signature',
    );
    expect(refusedFor(() => verifyWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, req.headers, req.body))).to.equal('invalid_signature');
    const sentAt = Number(req.headers['webhook-timestamp']) * 1000;
    expect(refusedFor(() => verifyWebhook(secret, req.headers, req.body, { now: sentAt + 6 * 60_000 }))).to.equal('timestamp_out_of_tolerance');
    expect(verifyWebhook(secret, req.headers, req.body, { now: sentAt + 4 * 60_000 })).to.deep.equal(note);
    const { ['webhook-signature']: _dropped, ...unsigned } = req.headers;
    expect(refusedFor(() => verifyWebhook(secret, unsigned, req.body))).to.equal('missing_header');

    // 6. the stored visitor, read back through the client
    const read = await tw.getVisitor({ params: { path: { platform_name, org_id, core_id: visitor.ids.core_id } } });
    expect(read.response.status).to.equal(200);
    expect(read.data!.contacts.map((c) => c.value)).to.deep.equal(['buyer@example.com']);
    expect(read.data!.name).to.equal('Bo Büyer');

    // 7. "Send test": verified like any delivery, and recognised as a test by header and by body
    const before = receiver.requests.length;
    const test = await tw.testIntegration({ params: { path: { platform_name, integration_id: created.data!.integration.id } } });
    expect(test.data).to.include({ delivered: true, status_code: 204 });
    const sample = receiver.requests[before]!;
    const sampleBody = verifyWebhook(secret, sample.headers, sample.body);
    expect(isTestDelivery(sample.headers, sample.body)).to.equal(true);
    expect(isTestDelivery({}, sampleBody)).to.equal(true);
    expect(isTestDelivery({ 'trackway-test': 'true' }, '{}')).to.equal(true);
    expect(sampleBody).to.include({ contact: 'test.contact@example.invalid', test: true });
  });

  it('sends the bearer token set at creation, and a request’s own Authorization wins', async () => {
    const platform_name = 'acme';
    const email = `${unique('ops')}@platform.example`;
    await ensurePlatformAccount(srv.deps, { platform: platform_name, email, password: PASSWORD, name: 'Ops' });
    const login = await tw.loginPlatformUser({ params: { path: { platform_name } }, body: { email, password: PASSWORD } });
    const token = login.data!.bearer_token;
    const mine = createTrackwayClient({ baseUrl: srv.url, token, fetch: checkedFetch });
    const listed = await mine.listOrganisations({ params: { path: { platform_name } } });
    expect(listed.response.status).to.equal(200);
    expect(listed.data!.items).to.deep.equal([]);
    const wrong = await mine.listOrganisations({ params: { path: { platform_name } }, headers: { authorization: 'Bearer nope' } });
    expect(wrong.response.status).to.equal(401);
    expect(wrong.error).to.include({ code: 4010 });
    mine.setToken(undefined);
    const anonymous = await mine.listOrganisations({ params: { path: { platform_name } } });
    expect(anonymous.response.status).to.equal(401);
  });
});
