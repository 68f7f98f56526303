// One real 400 per operation: the request each operation's documented 400
// example is the answer to (test/foundation/error-examples.test.ts drives
// them and compares the answer with the example word for word).
import type { Reply } from '../support/client.ts';
import type { TestServer } from '../support/harness.ts';
import { type OrgId, testOrgId } from '../support/org-id.ts';

export interface BadRequestContext {
  srv: TestServer; // TRUST_PROXY=true
  platform: string;
  token: string;
  orgId: OrgId;
}

const LONG_ID = 'c'.repeat(65);

/** The requests, by operationId, for a server and an account. */
export function badRequests(c: BadRequestContext): Record<string, () => Promise<Reply>> {
  const { srv, token } = c;
  const p = `/v1/rest/${c.platform}`;
  const o = `${p}/organisations/${c.orgId}`;
  const get = (path: string) => () => srv.api.get(path, { token });
  const send = (method: string, path: string, body: unknown) => () => srv.api.request(method, path, { body, token });
  const hook = (endpoint: string, extra: Record<string, unknown> = {}) => ({
    ...extra,
    org_id: c.orgId,
    active: true,
    type: 'WEBHOOK',
    data: { endpoint, do_events: true, do_contacts: true },
  });
  const track = (event: string, body: unknown) => () => srv.api.post(`/jsv1/${c.orgId}/r1/c1/null/event/${event}`, body);
  return {
    loginPlatformUser: () => srv.api.post(`${p}/users/login`, { email: 'integrations@acme.example' }),
    registerClientUser: send('POST', `${p}/users/register`, { email: 'jane@shop.example.com' }),
    changePassword: send('POST', `${p}/users/password`, { current_password: 'correct horse battery staple', new_password: 'short' }),
    listIntegrations: get(`${p}/integration`),
    createIntegration: send('POST', `${p}/integration`, hook('hooks.shop.example.com/trackway')),
    updateIntegration: send('PUT', `${p}/integration`, hook('hooks.shop.example.com/trackway', { id: 7 })),
    createIntegrationUnscoped: send('POST', '/v1/rest/integration', hook('hooks.shop.example.com/trackway')),
    updateIntegrationUnscoped: send('PUT', '/v1/rest/integration', hook('hooks.shop.example.com/trackway', { id: 7 })),
    getIntegration: get(`${p}/integration/seven`),
    patchIntegration: send('PATCH', `${p}/integration/7`, { data: { httpTimeout: '90' } }),
    deleteIntegration: send('DELETE', `${p}/integration/seven`, undefined),
    testIntegration: send('POST', `${p}/integration/seven/test`, undefined),
    listOrganisations: get(`${p}/organisations?limit=500`),
    getOrganisation: get(`${p}/organisations/forty-two`),
    updateOrganisationSettings: send('PATCH', o, { identity_verification: 'always' }),
    rotateIdentitySecret: send('POST', `${p}/organisations/forty-two/identity-secret/rotate`, undefined),
    getOrganisationStats: get(`${p}/organisations/forty-two/stats`),
    listVisitors: get(`${o}/visitors?contacts_only=maybe`),
    getVisitor: get(`${o}/visitors/${LONG_ID}`),
    listEvents: get(`${o}/events?name=Add%20to%20cart`),
    listDeliveries: get(`${o}/deliveries?status=sent`),
    listLearnEvents: get(`${o}/learn-events?cursor=eyJpZCI6MTIwfQ`),
    createPrivacyRequest: send('POST', `${o}/privacy-requests`, { type: 'erase', subject: {} }),
    listPrivacyRequests: get(`${o}/privacy-requests?limit=0`),
    getPrivacyRequest: get(`${o}/privacy-requests/three-one-four`),
    listPrivacySuppressions: get(`${o}/privacy-suppressions?limit=0`),
    getDelivery: get(`${p}/deliveries/9812abc`),
    retryDelivery: send('POST', `${p}/deliveries/9812abc/retry`, undefined),
    getHealth: () => srv.api.get('/healthz', { headers: { 'x-forwarded-for': 'not-an-address' } }),
    getReadiness: () => srv.api.get('/readyz', { headers: { 'x-forwarded-for': 'not-an-address' } }),
    getTrackerScript: () => srv.api.get(`/jsv1/tracker.js?v=${'9'.repeat(65)}`),
    recordViewEvent: track('view', { page: 'shop.example.com/collections/summer' }),
    recordViewEventPixel: () => srv.api.get(`/jsv1/${c.orgId}/r1/c1/null/event/view?page=shop.example.com`),
    recordUpdateCartEvent: track('updatecart', { cart_url: 'https://shop.example.com/cart', cart_value: '59.90' }),
    recordRemoveFromCartEvent: track('removefromcart', { cart_url: 'https://shop.example.com/cart', line_items: {} }),
    recordCheckoutEvent: track('checkout', { checkout: 'https://shop.example.com/checkouts/cn/1', items: [{ price: 59.9 }] }),
    recordBuyEvent: track('buy', { order_id: 1043 }),
    recordProductViewEvent: track('productview', { product_id: 'shirt', price: 10, product_url: 'https://shop.example/p' }),
    recordCategoryViewEvent: track('categoryview', { category: '' }),
  };
}

/** The operations that have a driver here (each has its own 400 example). */
export const BAD_REQUEST_OPERATIONS = Object.keys(badRequests({ srv: undefined as never, platform: 'acme', token: '', orgId: testOrgId(1) }));
