// One ingest batch, in one transaction the caller opened: identity upserts
// and stitches the batch's visitors, the events are inserted together, then
// each item in arrival order updates its person's profile (events) or links
// contacts (identifies), and webhooks turns it into the deliveries it causes
// (the transactional outbox). This module only orchestrates: identity owns
// visitors, persons and contacts, webhooks owns fan-out.
import type { Tx } from '../db/tenancy.ts';
import { Stitching } from '../identity/stitching.service.ts';
import { FanOut } from '../webhooks/fan-out.service.ts';
import type { TargetCache } from '../webhooks/targets.ts';
import { insertEvents } from './events.repository.ts';
import type { EventItem, IngestItem } from './ingest.types.ts';

/** What a batch needs besides its transaction. */
export interface BatchDeps {
  targets: TargetCache;
}

export async function processBatch(deps: BatchDeps, tx: Tx, items: IngestItem[]): Promise<void> {
  const people = new Stitching(tx);
  await people.touchVisitors(items);

  const events = items.filter((it): it is EventItem => it.kind === 'event');
  // the ids in the order given: event exports carry them
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
  // the identifies that meet no other identify of the batch, written together (the loop below keeps the order's effects)
  await people.identifyTogether(items);

  const fanOut = await FanOut.forOrganisations(
    deps.targets,
    items.map((it) => it.orgId),
  );
  for (const it of items) {
    if (it.kind === 'event') {
      const person = people.personOfVisitor(it.orgId, it.coreId);
      people.recordEvent(it);
      if (fanOut.exportsEvents(it.orgId)) fanOut.eventExported(it, idOf.get(it)!, await people.contacts(it.orgId, person));
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
