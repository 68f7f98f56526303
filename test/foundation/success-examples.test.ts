// Every success example of the document (2xx, every operation, every named
// example) is the shape of the server's real answer: each is driven here and
// compared with it. Objects must have the same keys at every depth, values
// the same JSON type (a null on either side stands for a nullable field;
// lists are compared by their first item), and an envelope's `code`,
// `message` and `status` must be word for word. Ids, timestamps, tokens and
// counts vary and are compared by type only. Error examples are
// test/foundation/error-examples.test.ts. A documented example without a
// driver below fails the test. getIntegration's `paused` and `disabled`
// differ from `healthy` only in values (its `health`), so one request
// answers all three here; `timedOut` is a real test delivery to a receiver
// that never answers.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { type Account, PASSWORD, newAccount, newMerchant, newWebhook, unique, uniqueIp } from '../support/accounts.ts';
import type { Reply, BodyOf } from '../support/client.ts';
import { doc } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

type Json = Record<string, unknown>;

interface Example {
  id: string;
  status: number;
  type: string;
  body: unknown;
}

function documentedSuccessExamples(): Example[] {
  const out: Example[] = [];
  const resolve = (x: Json): Json => {
    const ref = x.$ref as string | undefined;
    return ref
      ? (ref
          .split('/')
          .slice(1)
          .reduce<unknown>((a, k) => (a as Json)[k], doc) as Json)
      : x;
  };
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item) as Json[]) {
      if (typeof op?.operationId !== 'string') continue;
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        if (!/^2\d\d$/.test(status)) continue;
        for (const [type, media] of Object.entries((resolve(response).content ?? {}) as Record<string, Json>)) {
          const id = `${op.operationId} ${status}`;
          if (media.example !== undefined) out.push({ id, status: Number(status), type, body: media.example });
          for (const [name, ex] of Object.entries((media.examples ?? {}) as Record<string, Json>)) {
            out.push({ id: `${id} ${name}`, status: Number(status), type, body: resolve(ex).value });
          }
        }
      }
    }
  }
  return out;
}

const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** The differences between the example's shape and the answer's, as paths. */
function shapeDifferences(documented: unknown, real: unknown, at = ''): string[] {
  if (documented === null || real === null) return [];
  if (kind(documented) !== kind(real)) return [`${at || '/'}: documented ${kind(documented)}, answered ${kind(real)}`];
  if (Array.isArray(documented) && Array.isArray(real)) {
    if (!documented.length || !real.length) return [];
    // lists of different kinds of things (deliveries, notifications): the answered item closest in shape
    const ranked = real.map((item) => shapeDifferences(documented[0], item, `${at}/0`)).sort((a, b) => a.length - b.length);
    return ranked[0]!;
  }
  if (kind(documented) !== 'object') return [];
  const [d, r] = [documented as Json, real as Json];
  const out: string[] = [];
  for (const key of new Set([...Object.keys(d), ...Object.keys(r)])) {
    if (!(key in r)) out.push(`${at}/${key}: documented, not answered`);
    else if (!(key in d)) out.push(`${at}/${key}: answered, not documented`);
    else out.push(...shapeDifferences(d[key], r[key], `${at}/${key}`));
  }
  return out;
}

describe('documented success examples have the shape of the server’s answers', function () {
  this.timeout(180_000);
  let srv: TestServer;
  let account: Account;
  let orgId: OrgId;
  let orgToken: string;
  let hookId: number;
  let slowHookId: number;
  let deliveries: { id: number; kind: string }[];
  const deliveryOf = (k: string) => deliveries.find((d) => d.kind === k)!.id;
  let coreId: string;
  let privacyId: number;
  const receivers: http.Server[] = [];

  async function receiver(answer: boolean): Promise<string> {
    const server = http.createServer((req, res) => {
      req.resume();
      if (answer) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      // else: never answers (the test times out)
    });
    receivers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  }

  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    account = await newAccount(srv);
    const merchant = await newMerchant(srv, account);
    orgId = merchant.organisation.id;
    orgToken = merchant.organisation.token;
    const shop = `https://${merchant.organisation.domain}`; // the organisation's allowed domain: its URLs are shown
    hookId = (await newWebhook(srv, account, orgId, { endpoint: await receiver(true), authToken: '8c1e4b7d2f9a4e06b3c5d7e9f1a29f3a' })).id;
    slowHookId = (await newWebhook(srv, account, orgId, { endpoint: await receiver(false), httpTimeout: '1' })).id;
    // a contact (a delivery to each integration), events, a learning event, a finished export
    coreId = unique('c');
    const payload = Buffer.from(JSON.stringify({ email: `${unique('v')}@example.com`, name: 'Jane Doe' })).toString('base64url');
    await srv.api.post(`/jsv1/${orgId}/r1/${coreId}/null/event/productview`, {
      product_id: 1,
      price: 5,
      product_url: `${shop}/products/linen-shirt`,
    });
    await srv.api.post(`/jsv1/${orgId}/r1/${coreId}/null/event/updatecart`, {
      cart_url: `${shop}/cart`,
      product_id: 1,
      line_items: [{ quantity: 1, title: 'Linen shirt', line_price: 5, id: '1', product_id: 1 }],
      cart_value: 5,
    });
    // identified after some activity: the contact match names it (last_view, last_addtocart)
    expect((await srv.api.get(`/jsv1/identify/${orgId}/r1/${coreId}/${payload}`)).status).to.equal(200);
    await srv.api.post(`/jsv1/${orgId}/r1/${coreId}/null/event/view`, { page: `${shop}/` });
    await srv.api.post(`/jsv1/${orgId}/r1/${coreId}/null/event/updatecart`, {
      cart_url: `${shop}/cart`,
      product_id: 1,
      line_items: [],
      cart_value: 0,
    });
    await srv.api.post('/rest/v1/learn/event', {
      org_token: orgToken,
      eventName: 'newsletter_signup',
      eventVal: { list: 'weekly', source: 'footer' },
    });
    const list = await srv.api.get<BodyOf<'listDeliveries'>>(`/v1/rest/${account.platform}/organisations/${orgId}/deliveries`, {
      token: account.token,
    });
    deliveries = list.body.items;
    const made = await srv.api.post<BodyOf<'createPrivacyRequest'>>(
      `/v1/rest/${account.platform}/organisations/${orgId}/privacy-requests`,
      { type: 'export', subject: { core_id: coreId } },
      { token: account.token },
    );
    privacyId = made.body.id;
  });
  after(async () => {
    for (const r of receivers) r.close();
    await srv?.stop();
  });

  const p = () => `/v1/rest/${account.platform}`;
  const o = () => `${p()}/organisations/${orgId}`;
  const auth = () => ({ token: account.token });
  const hook = (extra: Json = {}) => ({
    org_id: orgId,
    active: true,
    type: 'WEBHOOK',
    data: {
      endpoint: 'https://hooks.shop.example.com/trackway',
      authToken: '8c1e4b7d2f9a4e06b3c5d7e9f1a29f3a',
      httpTimeout: '10',
      do_events: true,
      do_contacts: true,
    },
    ...extra,
  });
  const track = (event: string, body: unknown) => () => srv.api.post(`/jsv1/${orgId}/r1/${coreId}/null/event/${event}`, body);
  /** Waits (by polling the API, not the clock alone) until the privacy request has finished. */
  const finished = async () => {
    for (;;) {
      const r = await srv.api.get<BodyOf<'getPrivacyRequest'>>(`${o()}/privacy-requests/${privacyId}`, auth());
      if (r.body.status === 'done' || r.body.status === 'failed') return r;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const drivers: Record<string, () => Promise<Reply>> = {
    'loginPlatformUser 200': () =>
      srv.api.post(`${p()}/users/login`, { email: account.email, password: PASSWORD }, { headers: { 'x-forwarded-for': uniqueIp() } }),
    'registerClientUser 201': () =>
      srv.api.post(
        `${p()}/users/register`,
        {
          email: `${unique('j')}@shop.example.com`,
          name: 'Jane Doe',
          phone: '+14155550123',
          domain: `${unique('d')}.example.com`,
          organisation_name: "Jane's Linen Shop",
        },
        auth(),
      ),
    'changePassword 200': async () => {
      const other = await newAccount(srv);
      return srv.api.post(
        `${p()}/users/password`,
        { current_password: PASSWORD, new_password: 'a longer passphrase for 2026' },
        { token: other.token, headers: { 'x-forwarded-for': uniqueIp() } },
      );
    },
    'listIntegrations 200': () => srv.api.get(`${p()}/integration?org_id=${orgId}&limit=1`, auth()),
    'createIntegration 201': () => srv.api.post(`${p()}/integration`, hook(), auth()),
    'updateIntegration 200': async () => {
      const made = await srv.api.post<BodyOf<'createIntegration'>>(`${p()}/integration`, hook(), auth());
      return srv.api.put(`${p()}/integration`, hook({ id: made.body.integration.id, active: false }), auth());
    },
    'createIntegrationUnscoped 201': () => srv.api.post('/v1/rest/integration', hook(), auth()),
    'updateIntegrationUnscoped 200': async () => {
      const made = await srv.api.post<BodyOf<'createIntegrationUnscoped'>>('/v1/rest/integration', hook(), auth());
      return srv.api.put('/v1/rest/integration', hook({ id: made.body.integration.id, active: false }), auth());
    },
    'getIntegration 200 healthy': () => srv.api.get(`${p()}/integration/${hookId}`, auth()),
    'getIntegration 200 paused': () => srv.api.get(`${p()}/integration/${hookId}`, auth()),
    'getIntegration 200 disabled': () => srv.api.get(`${p()}/integration/${hookId}`, auth()),
    'patchIntegration 200': async () => {
      const made = await srv.api.post<BodyOf<'createIntegration'>>(`${p()}/integration`, hook(), auth());
      return srv.api.request('PATCH', `${p()}/integration/${made.body.integration.id}`, { body: { active: false }, ...auth() });
    },
    'testIntegration 200 delivered': () => srv.api.post(`${p()}/integration/${hookId}/test`, undefined, auth()),
    'testIntegration 200 timedOut': () => srv.api.post(`${p()}/integration/${slowHookId}/test`, undefined, auth()),
    'listOrganisations 200': () => srv.api.get(`${p()}/organisations?limit=1`, auth()),
    'getOrganisation 200': () => srv.api.get(o(), auth()),
    'updateOrganisationSettings 200': () => srv.api.request('PATCH', o(), { body: { export_unverified: true }, ...auth() }),
    'rotateIdentitySecret 200': () => srv.api.post(`${o()}/identity-secret/rotate`, undefined, auth()),
    'getOrganisationStats 200': () => srv.api.get(`${o()}/stats`, auth()),
    'listVisitors 200': () => srv.api.get(`${o()}/visitors?contacts_only=true&limit=1`, auth()),
    'getVisitor 200': () => srv.api.get(`${o()}/visitors/${coreId}`, auth()),
    'listEvents 200': () => srv.api.get(`${o()}/events?name=productview&limit=1`, auth()),
    'listDeliveries 200': () => srv.api.get(`${o()}/deliveries`, auth()),
    'listLearnEvents 200': () => srv.api.get(`${o()}/learn-events?limit=1`, auth()),
    'createPrivacyRequest 202': () =>
      srv.api.post(`${o()}/privacy-requests`, { type: 'erase', subject: { email: `${unique('gone')}@example.com` }, suppress: true }, auth()),
    'listPrivacyRequests 200': () => srv.api.get(`${o()}/privacy-requests?limit=1`, auth()),
    'getPrivacyRequest 200': finished,
    'listPrivacySuppressions 200': () => srv.api.get(`${o()}/privacy-suppressions`, auth()),
    'getDelivery 200': () => srv.api.get(`${p()}/deliveries/${deliveryOf('matched')}`, auth()),
    'retryDelivery 200': async () => {
      const id = deliveryOf('event');
      await srv.database.handle.db.updateTable('deliveries').set({ status: 'failed' }).where('org_id', '=', orgId).where('id', '=', id).execute();
      return srv.api.post(`${p()}/deliveries/${id}/retry`, undefined, auth());
    },
    'getTrackerScript 200': () => srv.api.get('/jsv1/tracker.js?v=3'),
    'identifyVisitor 200': () => srv.api.get(`/jsv1/identify/${orgId}/r1/${coreId}/${Buffer.from('{"name":"Jane Doe"}').toString('base64url')}`),
    'recordViewEvent 202': track('view', { page: 'https://shop.example.com/collections/summer' }),
    'recordViewEventPixel 200 transparentPixel': () =>
      srv.api.get(`/jsv1/${orgId}/r1/${coreId}/null/event/view?page=https%3A%2F%2Fshop.example.com%2F`),
    'recordUpdateCartEvent 202': track('updatecart', { cart_url: 'https://shop.example.com/cart', product_id: 1, cart_value: 5 }),
    'recordRemoveFromCartEvent 202': track('removefromcart', {
      cart_url: 'https://shop.example.com/cart',
      product_id: 1,
      line_items: [],
      cart_value: 0,
    }),
    'recordCheckoutEvent 202': track('checkout', {
      checkout: 'https://shop.example.com/checkouts/1',
      items: [{ product_id: 1, price: 5 }],
      cart_value: 5,
    }),
    'recordBuyEvent 202': track('buy', { order_id: '#1043' }),
    'recordProductViewEvent 202': track('productview', { product_id: 1, price: 5, product_url: 'https://shop.example.com/p' }),
    'recordCategoryViewEvent 202': track('categoryview', { category: 'summer-collection' }),
    'submitLearningEvent 200': () => srv.api.post('/rest/v1/learn/event', { org_token: orgToken, eventName: 'coupon', eventVal: 'SUMMER10' }),
    'registerAnalyticsUser 200': () => register(srv, registration()),
    'getHealth 200': () => srv.api.get('/healthz'),
    'getReadiness 200': () => srv.api.get('/readyz'),
  };

  const examples = documentedSuccessExamples();

  it('has a driver for every documented success example, and no driver without an example', () => {
    expect(examples.map((e) => e.id).sort()).to.deep.equal(Object.keys(drivers).sort());
  });

  it('answers each example with its status, media type and shape (and its envelope word for word)', async () => {
    const failures: string[] = [];
    for (const example of examples) {
      const reply = await drivers[example.id]!();
      const what = `${example.id}: ${reply.status} ${reply.text.slice(0, 300)}`;
      if (reply.status !== example.status) failures.push(`${what}: status, documented ${example.status}`);
      else if (!(reply.headers.get('content-type') ?? '').startsWith(example.type)) failures.push(`${what}: media type, documented ${example.type}`);
      else if (example.type === 'image/gif') {
        if ((reply.body as Buffer).toString('base64') !== example.body) failures.push(`${example.id}: a different image`);
      } else if (example.type.startsWith('text/')) {
        // the script itself is elided in the example: its first line and what follows it
        const [head, next] = String(example.body).split('\n');
        if (!reply.text.startsWith(`${head}\n${next!.slice(0, 14)}`)) failures.push(`${example.id}: a different text`);
      } else {
        const documented = example.body as Json;
        const real = reply.body as Json;
        const differences = shapeDifferences(documented, real);
        const envelope = ['code', 'message', ...(Object.keys(documented).length <= 2 ? ['status'] : [])];
        for (const key of envelope)
          if (key in documented && documented[key] !== real[key])
            differences.push(`/${key}: documented ${String(documented[key])}, answered ${String(real[key])}`);
        if (differences.length) failures.push(`${example.id}: ${differences.join('; ')}`);
      }
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });
});
