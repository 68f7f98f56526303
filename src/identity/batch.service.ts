// Identity's side of an ingest batch, run ONCE per batch inside the batch's
// transaction (src/tracking/batch.service.ts owns it): the visitors upserted
// together and stitched (Stitching.touchVisitors), the identifies that meet
// no other written together, then each item in arrival order — an event
// kept in its person's recent activity and the product catalogue, an
// identify's contacts linked (merging the persons a known contact joins) —
// and the profile writes flushed. It reads nothing of webhooks and calls
// nothing back: what the caller must be told comes back as what happened,
// in the batch's order, for webhooks to fan out from (src/webhooks/fan-out.service.ts).
import type { RawBuilder } from 'kysely';
import type { Executor, OrgId } from '../db/tenancy.ts';
import type { Recent } from './profile.service.ts';
import { type Identification, type LinkedContact, type ProfileEvent, type Sighting, Stitching } from './stitching.service.ts';

/** An event of the batch, as identity sees it. */
export type BatchEvent = Extract<Sighting, { kind: 'event' }> &
  ProfileEvent & {
    /** Global Privacy Control: the event is never linked to its person (nor reported) */
    gpc?: boolean;
  };

/** An identify of the batch, as identity sees it. */
export type BatchIdentify = Extract<Sighting, { kind: 'identify' }> & Identification & { policy: { allowsUrl(url: string): boolean } };

/** Which organisations want to hear of what (from their integrations): plain data, read before the batch. */
export interface BatchInterest {
  /** organisations whose events are exported: those come back with their person's contacts */
  exportsEvents: ReadonlySet<OrgId>;
  /** organisations notified of contact matches: identifies that link new contacts come back with the person's recent activity */
  notifiesContacts: ReadonlySet<OrgId>;
}

/** A contact of an event's person, `verified` when its link to the event's visitor is. */
export interface SeenContact {
  type: 'EMAIL' | 'PHONE';
  value: string;
  verified: boolean;
}

/** What happened to one item of the batch that someone wants to hear of. */
export type Happening<E, I> =
  | { kind: 'event'; item: E; contacts: SeenContact[] }
  | {
      kind: 'matched';
      item: I;
      /** the visitor's ids, its corex_id as stored after the batch's upsert */
      visitor: { coreId: string; roamingId: string; corexId: string | null };
      /** the contacts this identify newly linked */
      linked: LinkedContact[];
      /** the person's recent activity, including what the batch recorded up to this identify */
      recent: Recent;
    };

/**
 * A batch of identifies that nobody hears of, needing no merge, written as
 * ONE statement outside any transaction on `db` (one statement is atomic):
 * its visitors upserted with the contacts and links of its identifies
 * (Stitching.identifyAloneAtOnce). For a batch of identifies only, none of
 * an organisation notified of contact matches (nothing would be delivered),
 * whose identifies with contacts are of one organisation and meet no other.
 * False, with nothing written, for any other batch or when a contact it
 * meets belongs to another person (a merge): identifyBatch, in the
 * caller's transaction, then writes it.
 */
export async function identifyAtOnce(db: Executor, items: readonly (BatchEvent | BatchIdentify)[], interest: BatchInterest): Promise<boolean> {
  const identifies: BatchIdentify[] = [];
  for (const it of items) {
    if (it.kind !== 'identify' || interest.notifiesContacts.has(it.orgId)) return false;
    identifies.push(it);
  }
  return identifies.length > 0 && new Stitching(db).identifyAloneAtOnce(identifies);
}

/**
 * Runs identity for the whole batch; returns, in the batch's order, the
 * events of exporting organisations with their person's contacts at that
 * point, and the identifies that matched contacts for notified ones.
 * `alongside` (the batch's events insert) travels with the visitors upsert.
 */
export async function identifyBatch<E extends BatchEvent, I extends BatchIdentify>(
  tx: Executor,
  items: readonly (E | I)[],
  interest: BatchInterest,
  alongside?: RawBuilder<unknown>,
): Promise<Happening<E, I>[]> {
  const people = new Stitching(tx);
  const happened: Happening<E, I>[] = [];
  await people.touchVisitors(items, alongside);
  // the identifies that meet no other identify of the batch, written together (the loop below keeps the order's effects)
  await people.identifyTogether(items);
  // the contacts of every exported event's person, in one read (identifies and merges below drop what they change)
  await people.readContacts(items.filter((it) => it.kind === 'event' && !it.gpc && interest.exportsEvents.has(it.orgId)));
  for (const it of items) {
    if (it.kind === 'event') {
      // under Global Privacy Control an event is stored, never linked to its person nor sent
      if (it.gpc) continue;
      const person = people.personOfVisitor(it.orgId, it.coreId);
      people.recordEvent(it);
      if (!interest.exportsEvents.has(it.orgId)) continue;
      happened.push({ kind: 'event', item: it, contacts: await people.contacts(it.orgId, person, it.coreId) });
    } else {
      const { person, linked } = await people.identify(it);
      if (linked.length === 0 || !interest.notifiesContacts.has(it.orgId)) continue;
      // the notification carries the activity recorded so far
      const visitor = { coreId: it.coreId, roamingId: it.roamingId, corexId: people.corexOfVisitor(it.orgId, it.coreId) };
      const recent = await people.recentActivity(it.orgId, person, it.policy.allowsUrl);
      happened.push({ kind: 'matched', item: it, visitor, linked, recent });
    }
  }
  await people.flush();
  return happened;
}
