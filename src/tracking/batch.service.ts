// One ingest batch, in one transaction the caller opened: identity upserts
// and stitches the batch's visitors, the events are inserted together, then
// each item in arrival order updates its person's profile (events) or links
// contacts (identifies), and webhooks turns it into the deliveries it causes
// (the transactional outbox). A plain batch (src/tracking/plain-batch.ts:
// events that need no person and cause no delivery) is one statement instead.
// Before either, the privacy rules (src/privacy/ingest-privacy.service.ts)
// screen the batch: what Global Privacy Control or the suppression list
// keeps from being stored, linked or sent.
// This module only orchestrates: identity owns
// visitors, persons and contacts, webhooks owns fan-out.
import type { Database } from '../db/database.ts';
import type { Tx } from '../db/tenancy.ts';
import { Stitching } from '../identity/stitching.service.ts';
import { BatchPrivacy, type PrivacyDeps } from '../privacy/ingest-privacy.service.ts';
import { FanOut } from '../webhooks/fan-out.service.ts';
import type { TargetCache } from '../webhooks/targets.ts';
import { eventsInsert, insertEvents } from './events.repository.ts';
import type { EventItem, IngestItem } from './ingest.types.ts';
import { isPlainBatch, storePlainBatch } from './plain-batch.ts';

/** What a batch needs besides its transaction. */
export interface BatchDeps extends PrivacyDeps {
  targets: TargetCache;
}

/** What storeBatch prepared before the transaction: the integrations to notify, the privacy rules that screened the items. */
interface Prepared {
  fanOut: FanOut;
  privacy: BatchPrivacy;
}

/** Stores a batch: a plain one as one statement, any other in one transaction. */
export async function storeBatch(deps: BatchDeps, db: Database, submitted: IngestItem[]): Promise<void> {
  const { items, privacy } = await BatchPrivacy.screen(deps, db, submitted);
  if (items.length === 0) return;
  const fanOut = await FanOut.forOrganisations(
    deps.targets,
    items.map((it) => it.orgId),
  );
  if (isPlainBatch(items, (orgId) => fanOut.exportsEvents(orgId))) return storePlainBatch(db, items);
  await db.transaction().execute((tx) => processBatch(deps, tx, items, { fanOut, privacy }));
}

/** Writes a batch in the caller's transaction; `prepared` (storeBatch's): its items are screened already. */
export async function processBatch(deps: BatchDeps, tx: Tx, submitted: IngestItem[], prepared?: Prepared): Promise<void> {
  const { items, privacy } = prepared ? { items: submitted, privacy: prepared.privacy } : await BatchPrivacy.screen(deps, tx, submitted);
  const fanOut =
    prepared?.fanOut ??
    (await FanOut.forOrganisations(
      deps.targets,
      items.map((it) => it.orgId),
    ));
  const events = items.filter((it): it is EventItem => it.kind === 'event');
  const rows = events.map((it) => ({
    orgId: it.orgId,
    receivedAt: it.receivedAt,
    name: it.name,
    coreId: it.coreId,
    roamingId: it.roamingId,
    corexId: it.corexId,
    body: it.body,
  }));
  // event exports carry the ids (in the order given): then the events are a statement of their own;
  // otherwise they travel with the visitors upsert (one round trip less)
  const exports = (it: EventItem) => !it.gpc && fanOut.exportsEvents(it.orgId);
  const exporting = events.some(exports);
  const people = new Stitching(tx);
  await people.touchVisitors(items, exporting || rows.length === 0 ? undefined : eventsInsert(rows));
  const eventIds = exporting ? await insertEvents(tx, rows) : [];
  const idOf = new Map(events.map((it, i) => [it, eventIds[i]!]));
  // the identifies that meet no other identify of the batch, written together (the loop below keeps the order's effects)
  await people.identifyTogether(items);

  for (const it of items) {
    if (it.kind === 'event') {
      // under Global Privacy Control an event is stored, never linked to its person nor sent
      if (it.gpc) continue;
      const person = people.personOfVisitor(it.orgId, it.coreId);
      people.recordEvent(it);
      if (!exports(it)) continue;
      const contacts = await people.contacts(it.orgId, person, it.coreId);
      if (await privacy.exportable(tx, it.orgId, it.policy, contacts)) fanOut.eventExported(it, idOf.get(it)!, contacts);
    } else {
      const { person, linked } = await people.identify(it);
      if (linked.length === 0 || !fanOut.notifiesContacts(it.orgId)) continue;
      // the notification carries the activity recorded so far
      const visitor = { coreId: it.coreId, roamingId: it.roamingId, corexId: people.corexOfVisitor(it.orgId, it.coreId) };
      fanOut.contactMatched({ ...it, visitor }, linked, await people.recentActivity(it.orgId, person, it.policy.allowsUrl));
    }
  }
  await people.flush();
  await fanOut.enqueue(tx);
}
