// One ingest batch. It flows one way:
//   1. prepareBatch: the privacy rules (src/privacy/ingest-privacy.service.ts)
//      screen the items — what Global Privacy Control or the suppression list
//      keeps from being stored, linked or sent — and webhooks reads which
//      organisations export events or are notified of contact matches
//      (FanOut.forOrganisations, from the target cache);
//   2. a plain batch (src/tracking/plain-batch.service.ts: events that need no person
//      and cause no delivery) is one statement, outside any transaction,
//      without the visitors this process wrote lately and would not change;
//   3. a batch of identifies that needs no merge of persons and causes no
//      delivery is one statement as well (identity's identifyAtOnce: it
//      writes nothing when a merge turns out to be needed, and the batch
//      takes the transaction below);
//   4. any other, in ONE transaction (processBatch): the events inserted
//      with the visitors upsert (when exports need their ids, drawn ahead
//      by the process's EventIds), identity run once for the batch
//      (src/identity/batch.service.ts identifyBatch), which returns what
//      happened that webhooks must hear of; the exports the suppression list
//      forbids left out (BatchPrivacy.exportable); webhooks fans out once
//      from that (FanOut.deliver: the transactional outbox). Commit: the
//      events and their deliveries exist together.
// This module only orchestrates: identity owns visitors, persons and
// contacts, webhooks owns fan-out, privacy the screening.
import type { Database } from '../db/database.ts';
import type { Tx } from '../db/tenancy.ts';
import { identifyAtOnce, identifyBatch } from '../identity/batch.service.ts';
import type { FreshVisitors } from '../identity/fresh-visitors.service.ts';
import { BatchPrivacy, type PrivacyDeps } from '../privacy/ingest-privacy.service.ts';
import { type ContactMatch, type EventToExport, FanOut } from '../webhooks/fan-out.service.ts';
import type { TargetCache } from '../webhooks/targets.service.ts';
import { type EventIds, eventsInsert } from './events.repository.ts';
import type { EventItem, IdentifyItem, IngestItem } from './ingest.types.ts';
import { isPlainBatch, storePlainBatch } from './plain-batch.service.ts';

/** What a batch needs besides its database. */
export interface BatchDeps extends PrivacyDeps {
  targets: TargetCache;
  /** the visitors this process wrote lately: a plain batch leaves out those it would not change (absent: every touch is sent) */
  freshVisitors?: FreshVisitors;
  /** the ids of exported events, drawn ahead (one per process and database) */
  eventIds: EventIds;
}

/** A batch ready to be written: its screened items, the privacy rules that screened them, its fan-out, where its exported events' ids come from. */
export interface PreparedBatch {
  items: IngestItem[];
  privacy: BatchPrivacy;
  fanOut: FanOut;
  eventIds: EventIds;
}

/** Screens a batch and reads its organisations' targets (before, and outside, its transaction). */
export async function prepareBatch(deps: BatchDeps, db: Database, submitted: readonly IngestItem[]): Promise<PreparedBatch> {
  const { items, privacy } = await BatchPrivacy.screen(deps, db, submitted);
  const fanOut = await FanOut.forOrganisations(
    deps.targets,
    items.map((it) => it.orgId),
  );
  return { items, privacy, fanOut, eventIds: deps.eventIds };
}

/** Stores a batch: a plain one as one statement, any other in one transaction. */
export async function storeBatch(deps: BatchDeps, db: Database, submitted: IngestItem[]): Promise<void> {
  const batch = await prepareBatch(deps, db, submitted);
  if (batch.items.length === 0) return;
  if (isPlainBatch(batch.items, (orgId) => batch.fanOut.exportsEvents.has(orgId))) return storePlainBatch(db, batch.items, deps.freshVisitors);
  // the other kinds may rewrite a visitor (roaming_id, corex_id, name) without telling what they wrote:
  // forgotten before, and after (a plain batch of this process may have remembered one meanwhile)
  deps.freshVisitors?.forgetVisitors(batch.items);
  try {
    // identifies only, that need no merge and cause no delivery: one statement too (or nothing written, and the transaction below)
    if (await identifyAtOnce(db, batch.items, batch.fanOut)) return;
    await db.transaction().execute((tx) => processBatch(tx, batch));
  } finally {
    deps.freshVisitors?.forgetVisitors(batch.items);
  }
}

/** Writes a prepared batch in the caller's transaction. */
export async function processBatch(tx: Tx, { items, privacy, fanOut, eventIds }: PreparedBatch): Promise<void> {
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
  // event exports carry the ids (in the order given): drawn ahead, then inserted with the visitors upsert as any batch's events
  const exporting = events.some((it) => !it.gpc && fanOut.exportsEvents.has(it.orgId));
  const ids = exporting ? await eventIds.take(tx, rows.length) : undefined;
  const idOf = new Map(ids ? events.map((it, i) => [it, ids[i]!]) : []);
  const happened = await identifyBatch<EventItem, IdentifyItem>(tx, items, fanOut, rows.length === 0 ? undefined : eventsInsert(rows, ids));
  const deliver: (EventToExport | ContactMatch)[] = [];
  for (const h of happened) {
    if (h.kind === 'matched') deliver.push(h);
    else if (await privacy.exportable(tx, h.item.orgId, h.item.policy, h.contacts)) {
      deliver.push({ kind: 'event', item: h.item, eventId: idOf.get(h.item)!, contacts: h.contacts });
    }
  }
  await fanOut.deliver(tx, deliver);
}
