// Shared by the tests of privacy in the tracking path (ingest-suppression,
// ingest-gpc): a shop whose webhook posts to a real receiver on 127.0.0.1,
// suppressions made directly with the foundation's addSuppression and
// deps.subjects (the API that makes them is another area's), ingest items
// built as the tracking service builds them, what the database holds about a
// shop, and the receiver's requests once the shop's outbox has drained.
import { expect } from 'chai';
import { verifyIdentify } from '../../src/identity/verification.rules.ts';
import { normaliseSubject, type SubjectType } from '../../src/privacy/subject-hash.crypto.ts';
import { addSuppression } from '../../src/privacy/suppression.repository.ts';
import { type EventItem, eventItem, identifyItem, type IngestItem } from '../../src/tracking/ingest.types.ts';
import type { OrganisationPolicy } from '../../src/platform/organisation-directory.service.ts';
import { type Account, newMerchant, newWebhook, unique } from './accounts.ts';
import type { TestServer } from './harness.ts';
import type { ReceivedRequest, TestReceiver } from './receiver.ts';
import { eventually } from './wait.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import { testOrgId } from './org-id.ts';

export interface Shop {
  org: OrgId;
  domain: string;
  /** the receiver's path for this shop's deliveries */
  hook: string;
  policy(): Promise<OrganisationPolicy>;
}

/** A new organisation whose one webhook (events and contacts) posts to `receiver` under a path of its own. */
export async function newShop(srv: TestServer, account: Account, receiver: TestReceiver): Promise<Shop> {
  const { id: org, domain } = (await newMerchant(srv, account, { domain: `${unique('s')}.example` })).organisation;
  await newWebhook(srv, account, org, { endpoint: `${receiver.url}/${org}`, do_events: true, do_contacts: true });
  return { org, domain, hook: `/hook/${org}`, policy: async () => (await srv.deps.organisations.policy(org))! };
}

/** Puts a subject on the organisation's suppression list, as a privacy request with `suppress` would. */
export async function suppress(srv: TestServer, org: OrgId, type: SubjectType, raw: string): Promise<void> {
  const value = normaliseSubject(type, raw);
  expect(value, raw).to.be.a('string');
  await addSuppression(srv.deps.db, org, srv.deps.subjects.hash(org, { type, value: value! }), 1, new Date());
  // the policy's `suppressing` is cached: drop it here, as the settings changes do
  srv.deps.organisations.invalidate(org);
}

export type Step = { core: string; gpc?: boolean } & (
  { event: 'view' | 'productview'; product?: number; corex?: string } | { identify: { email?: string; phone?: string; name?: string } }
);

/** Ingest items as the tracking service makes them from requests. */
export async function itemsOf(shop: Shop, steps: Step[]): Promise<IngestItem[]> {
  const policy = await shop.policy();
  return steps.map((st): IngestItem => {
    const base = {
      orgId: shop.org,
      roamingId: `r-${st.core}`,
      coreId: st.core,
      receivedAt: new Date(),
      userAgent: 'UA/1',
      location: null,
      policy,
      gpc: st.gpc === true && policy.honorGpc,
    };
    if ('identify' in st) return identifyItem(base, verifyIdentify(policy, st.identify));
    const body =
      st.event === 'productview'
        ? { product_id: st.product, price: 1, product_url: `https://${shop.domain}/p/${st.product}` }
        : { page: `https://${shop.domain}/` };
    return eventItem(base, st.corex ?? null, st.event, body);
  });
}

/** What the database holds about a shop. */
export async function stored(srv: TestServer, org: OrgId) {
  const db = srv.deps.db;
  const [visitors, events, contacts, links, deliveries, products] = await Promise.all([
    db.selectFrom('visitors').select(['core_id', 'corex_id', 'name', 'person_id']).where('org_id', '=', org).orderBy('core_id').execute(),
    db.selectFrom('events').select(['core_id', 'corex_id', 'name']).where('org_id', '=', org).orderBy('id').execute(),
    db.selectFrom('contacts').select(['type', 'value']).where('org_id', '=', org).orderBy('value').execute(),
    db.selectFrom('visitor_contacts').select(['core_id']).where('org_id', '=', org).orderBy('core_id').execute(),
    db.selectFrom('deliveries').select(['kind', 'body', 'status']).where('org_id', '=', org).orderBy('id').execute(),
    db.selectFrom('products').select(['product_id']).where('org_id', '=', org).orderBy('product_id').execute(),
  ]);
  return {
    visitors,
    events,
    contacts: contacts.map((c) => `${c.type}:${c.value}`),
    links: links.map((l) => l.core_id),
    /** kind and contact of every delivery */
    deliveries: deliveries.map((d) => `${d.kind}:${(JSON.parse(d.body) as { contact: string }).contact}`),
    products: products.map((p) => Number(p.product_id)),
    /** every stored delivery body, as text */
    bodies: deliveries.map((d) => d.body),
  };
}

/**
 * The receiver's requests for the shop, once every delivery the shop's
 * outbox holds was made (none pending): what it will ever get for what was
 * committed so far.
 */
export async function drained(srv: TestServer, receiver: TestReceiver, shop: Shop): Promise<ReceivedRequest[]> {
  const db = srv.deps.db;
  await eventually(
    async () => {
      const rows = await db.selectFrom('deliveries').select(['status']).where('org_id', '=', shop.org).execute();
      return rows.every((r) => r.status === 'delivered') ? true : undefined;
    },
    20_000,
    `the deliveries of organisation ${shop.org}`,
    50,
  );
  return receiver.requests.filter((r) => r.path === shop.hook);
}

/** A policy that lets every item through (the batch tests hand items straight to storeBatch or storePlainBatch). */
export const OPEN_POLICY = { identityVerification: 'optional' as const, exportUnverified: true, allowsUrl: () => true, suppressing: false };

/** A page view as the tracking service makes it (roaming id r1, UA/1, located in GB), `over` replacing any of it. */
export function pageView(orgId: number, coreId: string, over: Partial<EventItem> = {}): EventItem {
  return {
    kind: 'event',
    orgId: testOrgId(orgId),
    roamingId: 'r1',
    coreId,
    receivedAt: new Date(),
    userAgent: 'UA/1',
    location: { country_code: 'GB', region: null, city: null, latitude: null, longitude: null, timezone: null },
    policy: OPEN_POLICY,
    corexId: null,
    name: 'view',
    body: { page: 'https://shop.example/' },
    ...over,
  };
}
