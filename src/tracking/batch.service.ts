// One ingest batch, in one transaction: visitors upserted together, visitors
// that share a corex_id stitched, events inserted together, then each item in
// arrival order: recent-activity profile, contacts and links for identifies,
// and the webhook deliveries it causes (the transactional outbox).
//
// Trust (DESIGN.md §6): a product or cart URL outside the organisation's
// allowed domains is kept in its event only, never in the profile or the
// product catalogue; under identity_verification `required` persons are
// joined only through verified contacts (no corex_id stitching: the browser
// alone sets corex_id, the hash does not cover it).
import type { Transaction } from 'kysely';
import type { DB, RecentView } from '../db/schema.ts';
import type { Deps } from '../deps.ts';
import {
  contactsOfPerson,
  identifyContacts,
  lockPersons,
  mergePersons,
  personProfile,
  type ProductSighting,
  type ProfileChange,
  personsSharingCorex,
  rememberProductUrls,
  upsertProfiles,
  upsertVisitors,
  type VisitorTouch,
} from '../identity/identity.repository.ts';
import { mergeProfiles, recentActivity } from '../identity/profile.ts';
import { enqueueDeliveries, type NewDelivery } from '../webhooks/outbox.repository.ts';
import { contactMatchedPayload } from '../webhooks/payloads/contact-matched.ts';
import { eventExportedPayload } from '../webhooks/payloads/event-exported.ts';
import type { Target } from '../webhooks/targets.ts';
import { insertEvents } from './events.repository.ts';
import type { EventItem, IdentifyItem, IngestItem } from './ingest.types.ts';

type Tx = Transaction<DB>;
const key = (orgId: number, coreId: string) => `${orgId}\u0000${coreId}`;

/** One touch per visitor: earliest first_seen, latest everything else. */
function visitorTouches(items: IngestItem[]): VisitorTouch[] {
  const byKey = new Map<string, VisitorTouch>();
  for (const it of items) {
    const k = key(it.orgId, it.coreId);
    const corexId = it.kind === 'event' ? it.corexId : null;
    const prev = byKey.get(k);
    if (!prev) {
      byKey.set(k, {
        orgId: it.orgId,
        coreId: it.coreId,
        roamingId: it.roamingId,
        corexId,
        firstSeen: it.receivedAt,
        lastSeen: it.receivedAt,
        userAgent: it.userAgent,
        location: it.location,
      });
      continue;
    }
    prev.roamingId = it.roamingId;
    prev.corexId = corexId ?? prev.corexId;
    prev.lastSeen = it.receivedAt > prev.lastSeen ? it.receivedAt : prev.lastSeen;
    prev.userAgent = it.userAgent ?? prev.userAgent;
    prev.location = it.location ?? prev.location;
  }
  // a stable lock order across concurrent batches
  return [...byKey.values()].sort((a, b) => a.orgId - b.orgId || (a.coreId < b.coreId ? -1 : a.coreId > b.coreId ? 1 : 0));
}

class BatchState {
  /** person of each visitor touched */
  readonly personOf = new Map<string, number>();
  /** corex_id of each visitor touched, after this batch's upsert (notifications carry it) */
  readonly corexOf = new Map<string, string | null>();
  /** persons merged during this batch: gone → kept */
  private readonly redirect = new Map<number, number>();
  /** contacts per person, read at most once per batch (dropped when they change) */
  private readonly contactCache = new Map<number, { type: 'EMAIL' | 'PHONE'; value: string }[]>();
  readonly deliveries: NewDelivery[] = [];
  /** profile writes not yet sent: one entry per person, views most recent first */
  private readonly profiles = new Map<string, ProfileChange>();
  private readonly products = new Map<string, ProductSighting>();

  constructor(
    readonly deps: Deps,
    readonly tx: Tx,
  ) {}

  find(person: number): number {
    let p = person;
    while (this.redirect.has(p)) p = this.redirect.get(p)!;
    return p;
  }

  personOfVisitor(orgId: number, coreId: string): number {
    return this.find(this.personOf.get(key(orgId, coreId))!);
  }

  private profile(orgId: number, person: number): ProfileChange {
    const k = key(orgId, String(person));
    let p = this.profiles.get(k);
    if (!p) this.profiles.set(k, (p = { orgId, person, views: [], cart: null }));
    return p;
  }

  recordView(orgId: number, person: number, url: string, at: Date): void {
    const p = this.profile(orgId, person);
    const view: RecentView = { url, at: at.toISOString() };
    p.views = [view, ...p.views.filter((v) => v.url !== url)].slice(0, 3);
  }

  recordCart(orgId: number, person: number, productId: number, cartUrl: string | null, at: Date): void {
    this.profile(orgId, person).cart = { productId, cartUrl, at };
  }

  recordProductUrl(orgId: number, productId: number, url: string, at: Date): void {
    this.products.set(key(orgId, String(productId)), { orgId, productId, url, at });
  }

  /** Sends the accumulated profile writes (before anything reads or merges profiles). */
  async flushProfiles(): Promise<void> {
    if (this.products.size > 0) {
      await rememberProductUrls(this.tx, [...this.products.values()]);
      this.products.clear();
    }
    if (this.profiles.size > 0) {
      await upsertProfiles(this.tx, [...this.profiles.values()]);
      this.profiles.clear();
    }
  }

  /** Makes two persons one (the older id stays). */
  async merge(orgId: number, a: number, b: number): Promise<number> {
    const x = this.find(a);
    const y = this.find(b);
    if (x === y) return x;
    const [keep, gone] = x < y ? [x, y] : [y, x];
    await this.flushProfiles();
    const rows = await lockPersons(this.tx, orgId, [keep, gone]);
    const merged = mergeProfiles(
      rows.find((r) => r.id === keep),
      rows.find((r) => r.id === gone),
    );
    await mergePersons(this.tx, orgId, keep, gone, merged);
    this.redirect.set(gone, keep);
    this.contactCache.delete(keep);
    this.contactCache.delete(gone);
    return keep;
  }

  async contacts(orgId: number, person: number) {
    let c = this.contactCache.get(person);
    if (!c) {
      c = await contactsOfPerson(this.tx, orgId, person);
      this.contactCache.set(person, c);
    }
    return c;
  }

  forgetContacts(person: number): void {
    this.contactCache.delete(person);
  }
}

async function applyEvent(s: BatchState, it: EventItem, eventId: number, targets: Target[]): Promise<void> {
  const person = s.personOfVisitor(it.orgId, it.coreId);
  const body = it.body;
  const allowed = (url: unknown): url is string => typeof url === 'string' && it.policy.allowsUrl(url);
  if (it.name === 'productview') {
    const url = body.product_url;
    if (allowed(url)) {
      s.recordProductUrl(it.orgId, body.product_id as number, url, it.receivedAt);
      s.recordView(it.orgId, person, url, it.receivedAt);
    }
  } else if (it.name === 'updatecart') {
    // the product still counts (its URL comes from the catalogue); a foreign cart_url does not
    s.recordCart(it.orgId, person, body.product_id as number, allowed(body.cart_url) ? body.cart_url : null, it.receivedAt);
  } else if (it.name === 'checkout' || it.name === 'buy') {
    for (const item of (body.items as { product_id: number; product_url?: string }[] | undefined) ?? []) {
      if (allowed(item.product_url)) s.recordProductUrl(it.orgId, item.product_id, item.product_url, it.receivedAt);
    }
  }
  const exportTo = targets.filter((t) => t.doEvents);
  if (exportTo.length === 0) return;
  for (const contact of await s.contacts(it.orgId, person)) {
    const payload = JSON.stringify(
      eventExportedPayload({
        orgId: it.orgId,
        contact: contact.value,
        type: contact.type,
        at: it.receivedAt,
        event: it.name,
        eventId,
        visitor: { coreId: it.coreId, roamingId: it.roamingId, corexId: it.corexId },
        properties: body,
        allowsUrl: it.policy.allowsUrl,
      }),
    );
    for (const t of exportTo) s.deliveries.push({ orgId: it.orgId, integrationId: t.id, kind: 'event', body: payload });
  }
}

async function applyIdentify(s: BatchState, it: IdentifyItem, targets: Target[]): Promise<void> {
  const { tx } = s;
  let person = s.personOfVisitor(it.orgId, it.coreId);
  const { contacts, name } = it.claim;
  if (contacts.length === 0 && name === null) return;
  const linked: { type: 'EMAIL' | 'PHONE'; value: string; verified: boolean }[] = [];
  for (const contact of await identifyContacts(tx, it.orgId, it.coreId, person, contacts, name)) {
    // a contact already known belongs to another person: the two are one from now on
    if (s.find(contact.person_id) !== person) person = await s.merge(it.orgId, contact.person_id, person);
    // a new link notifies; a link that only became verified does not
    if (contact.linked) linked.push({ type: contact.type, value: contact.value, verified: contact.verified });
  }
  s.forgetContacts(person);
  const notify = targets.filter((t) => t.doContacts);
  if (linked.length === 0 || notify.length === 0) return;
  await s.flushProfiles(); // the notification carries the activity recorded so far
  const recent = await recentActivity(tx, it.orgId, await personProfile(tx, it.orgId, person), it.policy.allowsUrl);
  for (const c of linked) {
    const payload = JSON.stringify(
      contactMatchedPayload({
        orgId: it.orgId,
        contact: c.value,
        type: c.type,
        verified: c.verified,
        at: it.receivedAt,
        visitor: { coreId: it.coreId, roamingId: it.roamingId, corexId: s.corexOf.get(key(it.orgId, it.coreId)) ?? null },
        lastView: recent.last_view,
        lastAddToCart: recent.last_addtocart,
      }),
    );
    for (const t of notify) s.deliveries.push({ orgId: it.orgId, integrationId: t.id, kind: 'matched', body: payload });
  }
}

export async function processBatch(deps: Deps, tx: Tx, items: IngestItem[]): Promise<void> {
  const s = new BatchState(deps, tx);
  const touched = await upsertVisitors(tx, visitorTouches(items));
  for (const v of touched) {
    s.personOf.set(key(v.org_id, v.core_id), v.person_id);
    s.corexOf.set(key(v.org_id, v.core_id), v.corex_id);
  }

  // visitors sharing a non-null corex_id are one person (not under `required`: see above)
  const policies = new Map(items.map((it) => [it.orgId, it.policy]));
  for (const v of touched) {
    if (v.corex_id === null || (!v.inserted && v.old_corex_id === v.corex_id)) continue;
    if (policies.get(v.org_id)?.identityVerification !== 'optional') continue;
    const self = s.personOfVisitor(v.org_id, v.core_id);
    for (const other of await personsSharingCorex(tx, v.org_id, v.corex_id, self)) {
      await s.merge(v.org_id, self, other);
    }
  }

  const events = items.filter((it): it is EventItem => it.kind === 'event');
  const eventIds = await insertEvents(
    tx,
    events.map((it) => ({
      orgId: it.orgId,
      receivedAt: it.receivedAt,
      name: it.name,
      coreId: it.coreId,
      roamingId: it.roamingId,
      corexId: it.corexId,
      body: it.body,
    })),
  );
  const idOf = new Map(events.map((it, i) => [it, eventIds[i]!]));

  const targetsByOrg = new Map<number, Target[]>();
  for (const orgId of new Set(items.map((it) => it.orgId))) targetsByOrg.set(orgId, await deps.targets.forOrg(orgId));
  for (const it of items) {
    const targets = targetsByOrg.get(it.orgId)!;
    if (it.kind === 'event') await applyEvent(s, it, idOf.get(it)!, targets);
    else await applyIdentify(s, it, targets);
  }
  await s.flushProfiles();
  await enqueueDeliveries(tx, s.deliveries);
}
