// Identity's side of an ingest batch, inside the batch's transaction:
// visitors upserted together, visitors that share a corex_id stitched into one
// person, the recent-activity profile and the product URL catalogue kept from
// events, contacts and links recorded for identifies (merging the persons a
// known contact joins). One Stitching per batch, run by identifyBatch
// (batch.service.ts); the ingest batch owns the transaction.
//
// Trust (docs/design.md "Trust"): a product or cart URL outside the organisation's
// allowed domains is kept in its event only, never in the profile or the
// product catalogue; under identity_verification `required` persons are
// joined only through verified contacts (no corex_id stitching: the browser
// alone sets corex_id, the hash does not cover it).
import type { RawBuilder } from 'kysely';
import type { Location, RecentView } from '../db/schema.ts';
import type { Executor, OrgId } from '../db/tenancy.ts';
import {
  identifyContacts,
  identifyContactsTogether,
  type IdentifiedContact,
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
} from './identity.repository.ts';
import { type IdentifyAhead, isMergeRefusal, upsertVisitorsIdentifying } from './identify-upsert.repository.ts';
import { mergeProfiles, type Recent, recentActivity } from './profile.service.ts';
import { type ProfileEvent, recordedBy } from './recorded.rules.ts';
import type { IdentifyClaim } from './verification.rules.ts';
import { contactsOfPersonsSeen } from './visitors.repository.ts';

// what an event records is decided in recorded.rules.ts (the one-statement batch uses it too)
export { EVENTS_RECORDED, type ProfileEvent } from './recorded.rules.ts';

/** A visitor seen in the batch (an event or an identify). */
export type Sighting = {
  orgId: OrgId;
  coreId: string;
  roamingId: string;
  receivedAt: Date;
  userAgent: string | null;
  location: Location | null;
  policy: { identityVerification: 'optional' | 'required' };
} & ({ kind: 'event'; corexId: string | null } | { kind: 'identify'; claim: { name: string | null } });

/** An identify seen in the batch, with what it links. */
type BatchSighting = Sighting & Identification;

/** An identify: the contacts to link to the visitor's person. */
export interface Identification {
  orgId: OrgId;
  coreId: string;
  claim: IdentifyClaim;
}

export interface LinkedContact {
  type: 'EMAIL' | 'PHONE';
  value: string;
  verified: boolean;
}

const key = (orgId: OrgId, coreId: string) => `${orgId}\u0000${coreId}`;

/** One touch per visitor: earliest first_seen, latest everything else. */
export function visitorTouches(items: readonly Sighting[]): VisitorTouch[] {
  const byKey = new Map<string, VisitorTouch>();
  for (const it of items) {
    const k = key(it.orgId, it.coreId);
    const corexId = it.kind === 'event' ? it.corexId : null;
    // the visitor's name: the last one an identify of the batch gave, as identifies one by one would leave it
    const name = it.kind === 'identify' ? it.claim.name : null;
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
        force: it.kind === 'identify',
        name,
      });
      continue;
    }
    prev.force ||= it.kind === 'identify';
    prev.roamingId = it.roamingId;
    prev.corexId = corexId ?? prev.corexId;
    prev.lastSeen = it.receivedAt > prev.lastSeen ? it.receivedAt : prev.lastSeen;
    prev.userAgent = it.userAgent ?? prev.userAgent;
    prev.location = it.location ?? prev.location;
    prev.name = name ?? prev.name;
  }
  // a stable lock order across concurrent batches
  return [...byKey.values()].sort((a, b) => a.orgId - b.orgId || (a.coreId < b.coreId ? -1 : a.coreId > b.coreId ? 1 : 0));
}

/** Identity's work for one ingest batch (a unit of work: made by identifyBatch for the batch, dropped with it; its caches live no longer). */
export class Stitching {
  /** person of each visitor touched */
  private readonly personOf = new Map<string, number>();
  /** corex_id of each visitor touched, after this batch's upsert (contact matches carry it) */
  private readonly corexOf = new Map<string, string | null>();
  /** persons merged during this batch: gone → kept */
  private readonly redirect = new Map<number, number>();
  /** contacts per person, read at most once per batch (dropped when they change) */
  private readonly contactCache = new Map<number, { type: 'EMAIL' | 'PHONE'; value: string; verified_by: string[] }[]>();
  /** profile writes not yet sent: one entry per person, views most recent first */
  private readonly profiles = new Map<string, ProfileChange>();
  private readonly products = new Map<string, ProductSighting>();
  /** identifies already written together (identifyTogether), by visitor: their contacts as the statement returned them */
  private readonly written = new Map<string, IdentifiedContact[]>();
  /** contacts created by identifyTogether whose identify the batch has not reached yet: hidden from contacts() until then */
  private readonly pending = new Map<number, Set<string>>();
  /** the batch's lone identifies per organisation (alone()) */
  private aloneByOrg: Map<OrgId, IdentifyAhead[]> | undefined;

  constructor(private readonly tx: Executor) {}

  /**
   * Upserts every visitor of the batch and joins the visitors that share a
   * non-null corex_id into one person (not under `required`: see above).
   * `alongside` (the batch's events insert) travels in the same statement.
   */
  async touchVisitors(items: readonly (Extract<Sighting, { kind: 'event' }> | BatchSighting)[], alongside?: RawBuilder<unknown>): Promise<void> {
    const touches = visitorTouches(items);
    // without a corex_id nothing is stitched below: one organisation's lone identifies go with the upsert (identify-upsert.repository.ts)
    const ahead = touches.every((t) => t.corexId === null) ? this.largestAlone(items) : undefined;
    const done = ahead && (await upsertVisitorsIdentifying(this.tx, touches, ahead.orgId, ahead.rows, alongside));
    if (ahead && done) this.wrote(ahead.orgId, done.contacts);
    const touched = done ? done.visitors : await upsertVisitors(this.tx, touches, alongside);
    for (const v of touched) {
      this.personOf.set(key(v.org_id, v.core_id), v.person_id);
      this.corexOf.set(key(v.org_id, v.core_id), v.corex_id);
    }
    const policies = new Map(items.map((it) => [it.orgId, it.policy]));
    for (const v of touched) {
      if (v.corex_id === null || (!v.inserted && v.old_corex_id === v.corex_id)) continue;
      if (policies.get(v.org_id)?.identityVerification !== 'optional') continue;
      const self = this.personOfVisitor(v.org_id, v.core_id);
      for (const other of await personsSharingCorex(this.tx, v.org_id, v.corex_id, self)) {
        await this.merge(v.org_id, self, other);
      }
    }
  }

  /**
   * A batch of identifies only, whose identifies with contacts are all of one
   * organisation and meet no other identify of the batch: touchVisitors'
   * one statement, with those identifies, is everything the batch writes,
   * unless a contact belongs to another person (identify() would merge the
   * two). Sent on the Stitching's executor as it is — the caller's database,
   * outside any transaction: one statement is atomic — it refuses, and is
   * undone whole, when a merge is needed. True when the batch is written;
   * false when it is not such a batch or a merge is needed: nothing was
   * written, and the caller takes the transaction (identifyBatch).
   */
  async identifyAloneAtOnce(items: readonly BatchSighting[]): Promise<boolean> {
    const ahead = this.largestAlone(items);
    if (!ahead || ahead.rows.length !== items.filter((it) => it.claim.contacts.length > 0).length) return false;
    try {
      await upsertVisitorsIdentifying(this.tx, visitorTouches(items), ahead.orgId, ahead.rows, undefined, { refuseMerges: true });
      return true;
    } catch (err) {
      if (isMergeRefusal(err)) return false;
      throw err;
    }
  }

  /** The corex_id of a visitor of this batch, as stored after its upsert. */
  corexOfVisitor(orgId: OrgId, coreId: string): string | null {
    return this.corexOf.get(key(orgId, coreId)) ?? null;
  }

  /** The person a visitor of this batch belongs to now (after the merges so far). */
  personOfVisitor(orgId: OrgId, coreId: string): number {
    return this.find(this.personOf.get(key(orgId, coreId))!);
  }

  /** Keeps what an event says about its person's recent activity and the product catalogue (recorded.rules.ts). */
  recordEvent(it: ProfileEvent): void {
    const person = this.personOfVisitor(it.orgId, it.coreId);
    const { products, view, cart } = recordedBy(it);
    for (const p of products) this.recordProductUrl(p.orgId, p.productId, p.url, p.at);
    if (view !== null) this.recordView(it.orgId, person, view, it.receivedAt);
    if (cart !== null) this.recordCart(it.orgId, person, cart.productId, cart.cartUrl, it.receivedAt);
  }

  /**
   * Links an identify's contacts to the visitor's person (its name went with
   * touchVisitors); a contact already known makes its person and this one
   * one. Returns the person and the contacts newly linked (a link that only
   * became verified is not new).
   */
  async identify(it: Identification): Promise<{ person: number; linked: LinkedContact[] }> {
    let person = this.personOfVisitor(it.orgId, it.coreId);
    const { contacts } = it.claim;
    const linked: LinkedContact[] = [];
    // the name went with the visitor upsert (touchVisitors)
    if (contacts.length === 0) return { person, linked };
    const k = key(it.orgId, it.coreId);
    let rows = this.written.get(k);
    if (rows) {
      this.written.delete(k);
      const hidden = this.pending.get(it.orgId);
      for (const c of rows) hidden?.delete(`${c.type}:${c.value}`);
    } else rows = await identifyContacts(this.tx, it.orgId, it.coreId, person, contacts);
    for (const contact of rows) {
      // a contact already known belongs to another person: the two are one from now on
      if (this.find(contact.person_id) !== person) person = await this.merge(it.orgId, contact.person_id, person);
      if (contact.linked) linked.push({ type: contact.type, value: contact.value, verified: contact.verified });
    }
    this.contactCache.delete(person);
    return { person, linked };
  }

  /**
   * Writes, ahead of the batch's order, the identifies whose visitor and
   * contacts meet no other identify of the batch: one statement per
   * organisation for all of them (with at least two), instead of one each;
   * in a batch without a corex_id, one organisation's (any number) went with
   * the visitors upsert already (touchVisitors).
   * What they write is what their own statements would have written: new
   * contacts go to the visitor's person (a merge before the identify's turn
   * moves them along), a known contact keeps its person, and the merges it
   * calls for happen when identify() reaches the item, in order. Until then
   * the contacts they created are hidden from contacts(), so an event export
   * earlier in the batch sees what it saw before. The rest (the identifies
   * that meet) take identify()'s one statement each, in order.
   */
  async identifyTogether(items: readonly ({ kind: 'event' } | ({ kind: 'identify' } & Identification))[]): Promise<void> {
    for (const [orgId, rows] of this.alone(items)) {
      // fewer than two: identify()'s own statement is as many; an organisation written with the upsert is done
      if (rows.length < 2 || this.pending.has(orgId)) continue;
      const withPerson = rows.map((r) => ({ coreId: r.coreId, person: this.personOfVisitor(orgId, r.coreId), contacts: r.contacts }));
      this.wrote(orgId, await identifyContactsTogether(this.tx, orgId, withPerson));
    }
  }

  /** The identifies with contacts whose visitor and contacts meet no other identify of the batch, per organisation (once per batch). */
  private alone(items: readonly ({ kind: 'event' } | ({ kind: 'identify' } & Identification))[]): Map<OrgId, IdentifyAhead[]> {
    if (this.aloneByOrg) return this.aloneByOrg;
    const byOrg = (this.aloneByOrg = new Map<OrgId, IdentifyAhead[]>());
    const identifies = items.filter((it): it is { kind: 'identify' } & Identification => it.kind === 'identify');
    const seen = new Map<string, number>();
    const count = (k: string) => seen.set(k, (seen.get(k) ?? 0) + 1);
    for (const it of identifies) {
      count(`v${key(it.orgId, it.coreId)}`);
      for (const c of it.claim.contacts) count(`c${key(it.orgId, `${c.type}:${c.value}`)}`);
    }
    for (const it of identifies) {
      const { contacts } = it.claim;
      if (contacts.length === 0) continue;
      if (seen.get(`v${key(it.orgId, it.coreId)}`) !== 1) continue;
      if (contacts.some((c) => seen.get(`c${key(it.orgId, `${c.type}:${c.value}`)}`) !== 1)) continue;
      let rows = byOrg.get(it.orgId);
      if (!rows) byOrg.set(it.orgId, (rows = []));
      rows.push({ coreId: it.coreId, contacts });
    }
    return byOrg;
  }

  /** The organisation with the most lone identifies (any number, one included), to go with the upsert. */
  private largestAlone(items: readonly ({ kind: 'event' } | ({ kind: 'identify' } & Identification))[]) {
    let best: { orgId: OrgId; rows: IdentifyAhead[] } | undefined;
    for (const [orgId, rows] of this.alone(items)) {
      if (!best || rows.length > best.rows.length) best = { orgId, rows };
    }
    return best;
  }

  /** Keeps what identifies written ahead of the batch's order returned, and hides the contacts they created until their turn. */
  private wrote(orgId: OrgId, byVisitor: Map<string, (IdentifiedContact & { created: boolean })[]>): void {
    const hidden = new Set<string>();
    for (const [coreId, contacts] of byVisitor) {
      this.written.set(key(orgId, coreId), contacts);
      for (const c of contacts) if (c.created) hidden.add(`${c.type}:${c.value}`);
    }
    this.pending.set(orgId, hidden);
  }

  /**
   * Reads, in one statement per organisation, the contacts of the persons
   * the given visitors belong to now, into the cache contacts() reads: what
   * contacts() would have read for each of them one by one (a person with
   * none caches none). Called once the visitors are touched and the
   * identifies written together, before the batch's order is walked: an
   * identify or a merge later in the batch drops what it changes from the
   * cache (identify, merge), and contacts() then reads that person again, at
   * that point, as before.
   */
  async readContacts(visitors: readonly { orgId: OrgId; coreId: string }[]): Promise<void> {
    const byOrg = new Map<OrgId, Set<number>>();
    for (const v of visitors) {
      const person = this.personOfVisitor(v.orgId, v.coreId);
      if (this.contactCache.has(person)) continue;
      let persons = byOrg.get(v.orgId);
      if (!persons) byOrg.set(v.orgId, (persons = new Set()));
      persons.add(person);
    }
    for (const [orgId, persons] of byOrg) {
      for (const p of persons) this.contactCache.set(p, []);
      for (const { person_id, ...c } of await contactsOfPersonsSeen(this.tx, orgId, [...persons])) this.contactCache.get(person_id)?.push(c);
    }
  }

  /**
   * The contacts of a person (read at most once per batch), each `verified`
   * when its link to this visitor is (what an event export of the visitor
   * says). A link an identifyTogether confirmed ahead of the batch's order
   * counts already: that visitor did prove it, a moment later.
   */
  async contacts(orgId: OrgId, person: number, coreId: string): Promise<{ type: 'EMAIL' | 'PHONE'; value: string; verified: boolean }[]> {
    let c = this.contactCache.get(person);
    if (!c) {
      c = (await contactsOfPersonsSeen(this.tx, orgId, [person])).map(({ person_id: _, ...x }) => x);
      this.contactCache.set(person, c);
    }
    const hidden = this.pending.get(orgId);
    const shown = hidden && hidden.size > 0 ? c.filter((x) => !hidden.has(`${x.type}:${x.value}`)) : c;
    return shown.map((x) => ({ type: x.type, value: x.value, verified: x.verified_by.includes(coreId) }));
  }

  /** The person's recent activity including what this batch recorded so far. */
  async recentActivity(orgId: OrgId, person: number, allowsUrl: (url: string) => boolean): Promise<Recent> {
    await this.flush();
    return recentActivity(this.tx, orgId, await personProfile(this.tx, orgId, person), allowsUrl);
  }

  /** Sends the accumulated profile writes (before anything reads or merges profiles). */
  async flush(): Promise<void> {
    if (this.products.size > 0) {
      await rememberProductUrls(this.tx, [...this.products.values()]);
      this.products.clear();
    }
    if (this.profiles.size > 0) {
      await upsertProfiles(this.tx, [...this.profiles.values()]);
      this.profiles.clear();
    }
  }

  private find(person: number): number {
    let p = person;
    while (this.redirect.has(p)) p = this.redirect.get(p)!;
    return p;
  }

  private profile(orgId: OrgId, person: number): ProfileChange {
    const k = key(orgId, String(person));
    let p = this.profiles.get(k);
    if (!p) this.profiles.set(k, (p = { orgId, person, views: [], cart: null }));
    return p;
  }

  private recordView(orgId: OrgId, person: number, url: string, at: Date): void {
    const p = this.profile(orgId, person);
    const view: RecentView = { url, at: at.toISOString() };
    p.views = [view, ...p.views.filter((v) => v.url !== url)].slice(0, 3);
  }

  private recordCart(orgId: OrgId, person: number, productId: number, cartUrl: string | null, at: Date): void {
    this.profile(orgId, person).cart = { productId, cartUrl, at };
  }

  private recordProductUrl(orgId: OrgId, productId: number, url: string, at: Date): void {
    this.products.set(key(orgId, String(productId)), { orgId, productId, url, at });
  }

  /** Makes two persons one (the older id stays). */
  private async merge(orgId: OrgId, a: number, b: number): Promise<number> {
    const x = this.find(a);
    const y = this.find(b);
    if (x === y) return x;
    const [keep, gone] = x < y ? [x, y] : [y, x];
    await this.flush();
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
}
