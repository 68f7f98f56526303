// A tenant with one of everything, made through the API: a platform account,
// a merchant organisation, a webhook integration, an identified visitor with
// events, a delivery, a learning event and a finished privacy request (an
// export). The fuzz and auth suites aim their
// requests at these real ids so they get past authentication and lookups.
// Every identifying string carries a tag, so a leak is easy to spot.
import { expect } from 'chai';
import { eventually } from '../support/wait.ts';
import type { TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

export interface FullTenant {
  tag: string;
  account: Account;
  orgId: OrgId;
  orgToken: string;
  domain: string;
  integrationId: number;
  signingSecret: string;
  authToken: string;
  deliveryId: number;
  coreId: string;
  roamingId: string;
  email: string;
  payload: string;
  /** values a request can name in a path or query parameter, by parameter name */
  values: Record<string, string>;
  /** strings that identify this tenant and must never reach another one */
  secrets: string[];
}

/** `endpoint` should be a local TestReceiver: nothing may leave the machine, not even a DNS lookup. */
export async function fullTenant(srv: TestServer, endpoint: string, platform = 'acme', label = 'tenant'): Promise<FullTenant> {
  const tag = unique(`${label}x`).toLowerCase();
  const account = await newAccount(srv, platform);
  const m = await newMerchant(srv, account, { organisation_name: `org-name-${tag}`, name: `user-name-${tag}`, phone: '+44 20 7946 0958' });
  const orgId = m.organisation.id;
  const authToken = `auth-token-${tag}-ZQXW`;
  const hook = await newWebhook(srv, account, orgId, { endpoint: `${endpoint}?tenant=${tag}`, authToken });
  const coreId = `core-${tag}`.slice(0, 64);
  const roamingId = `roam-${tag}`.slice(0, 64);
  const email = `visitor-${tag}@visitors.example`;
  const payload = b64url({ email, name: `visitor-name-${tag}` });
  const id = await srv.api.get(`/jsv1/identify/${orgId}/${roamingId}/${coreId}/${payload}`);
  expect(id.status, id.text).to.equal(200);
  const ev = await srv.api.post(`/jsv1/${orgId}/${roamingId}/${coreId}/null/event/productview`, {
    product_id: 7,
    price: 10,
    product_url: `https://shop-${tag}.example.com/p/7`,
  });
  expect(ev.status, ev.text).to.equal(202);
  const learn = await srv.api.post('/rest/v1/learn/event', { org_token: m.organisation.token, eventName: `learn-${tag}`, eventVal: { tag } });
  expect(learn.status, learn.text).to.equal(200);
  const deliveries = await srv.api.get<BodyOf<'listDeliveries'>>(`/v1/rest/${platform}/organisations/${orgId}/deliveries`, { token: account.token });
  expect(deliveries.status, deliveries.text).to.equal(200);
  expect(deliveries.body.items.length, 'the identify and the event queued deliveries').to.be.greaterThan(0);
  const deliveryId = deliveries.body.items[0]!.id;
  const organisation = await srv.api.get<BodyOf<'getOrganisation'>>(`/v1/rest/${platform}/organisations/${orgId}`, { token: account.token });
  expect(organisation.status, organisation.text).to.equal(200);
  const identitySecret = organisation.body.identity_secret;
  const privacy = await srv.api.post<BodyOf<'createPrivacyRequest'>>(
    `/v1/rest/${platform}/organisations/${orgId}/privacy-requests`,
    { type: 'export', subject: { email } },
    { token: account.token },
  );
  expect(privacy.status, privacy.text).to.equal(202);
  // run by the server's privacy runner: finished before anything compares the tenant's rows
  await eventually(async () => {
    const r = await srv.api.get<BodyOf<'getPrivacyRequest'>>(`/v1/rest/${platform}/organisations/${orgId}/privacy-requests/${privacy.body.id}`, {
      token: account.token,
    });
    return r.body.status === 'done' ? true : undefined;
  }, 20_000);
  const values: Record<string, string> = {
    platform_name: platform,
    org_id: String(orgId),
    integration_id: String(hook.id),
    delivery_id: String(deliveryId),
    request_id: String(privacy.body.id),
    core_id: coreId,
    roaming_id: roamingId,
    corex_id: 'null',
    payload,
    name: 'productview',
    status: 'pending',
    limit: '5',
    contacts_only: 'true',
    q: m.organisation.domain.slice(0, 10),
    page: `https://shop-${tag}.example.com/`,
  };
  return {
    tag,
    account,
    orgId,
    orgToken: m.organisation.token,
    domain: m.organisation.domain,
    integrationId: hook.id,
    signingSecret: hook.signing_secret,
    authToken,
    deliveryId,
    coreId,
    roamingId,
    email,
    payload,
    values,
    secrets: [
      tag,
      account.email,
      account.token,
      m.organisation.token,
      m.organisation.domain,
      m.user.email,
      hook.signing_secret,
      identitySecret,
      authToken,
      email,
      coreId,
    ],
  };
}
