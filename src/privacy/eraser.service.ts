// How a person is erased (README "Privacy"), shared by erase requests and
// visitor retention: in bounded steps, each its own short transaction of at
// most `batch` rows of one kind, so that ingest (which inserts events and
// touches visitors) is never held up for long. The caller's Step runs each
// one and does its bookkeeping in the same transaction (a request's fenced
// progress: a run that lost its claim rolls back instead of going on).
//
// Order, and why:
// 1. product URLs the person's events put in the catalogue (read from those
//    events, so before they go);
// 2. the events of every visitor of the person, in every partition;
// 3. the deliveries naming one of the person's contacts, with their attempts
//    (webhooks/person-deliveries.repository.ts: how they are found);
// 4. earlier export results about any of the person's identifiers;
// 5. the visitors, a chunk at a time: locked, their last events, links and
//    rows (name, user agent, location) deleted in one transaction, so that
//    a concurrent batch for one of them waits and then makes a new visitor;
// 6. the contacts and their links, with a contactErased notice per contact
//    to every receiver, in the same transaction;
// 7. once more the deliveries and visitors that appeared meanwhile (an
//    identify racing the erasure), then the persons' profiles.
// The anchors (visitors, contacts) go last: a run that stops half-way finds
// the rest again through them (and through the persons it recorded).
import type { Database } from '../db/database.ts';
import type { FreshVisitors } from '../identity/fresh-visitors.service.ts';
import type { PrivacyCounts } from '../db/schema.ts';
import type { Tx, OrgId } from '../db/tenancy.ts';
import {
  contactsOfPersons,
  deleteContactsOfPersons,
  deletePersons,
  deleteVisitors,
  forgetProductUrls,
  lockVisitors,
  visitorsOfPersons,
} from '../identity/person-records.service.ts';
import { deleteEventsOfVisitors, productSightingsOfVisitors } from '../tracking/visitor-events.service.ts';
import { deleteDeliveriesAbout, noticeErasedContacts } from '../webhooks/erased-notices.service.ts';
import { dropExportResults } from './requests.repository.ts';
import type { SubjectHasher } from './subject-hash.crypto.ts';

/** Rows of one kind per transaction. */
export const ERASE_BATCH = 1000;

/** The runner is stopping: a step refuses to start (the work done so far stays done; the next run goes on). */
export class RunStopped extends Error {}

/** One short transaction of an erasure: `fn` does its part and says what it removed. */
export type Step = (fn: (tx: Tx) => Promise<Partial<PrivacyCounts>>) => Promise<Partial<PrivacyCounts>>;

export interface EraserDeps {
  db: Database;
  subjects: SubjectHasher;
  /** this process's memory of visitors it wrote: forgotten for the organisation once its visitors are deleted (the others hear VISITORS_CHANNEL) */
  freshVisitors?: FreshVisitors;
}

export const NO_COUNTS: PrivacyCounts = { persons: 0, visitors: 0, contacts: 0, events: 0, deliveries: 0 };

export function addCounts(a: PrivacyCounts, b: Partial<PrivacyCounts>): PrivacyCounts {
  return {
    persons: a.persons + (b.persons ?? 0),
    visitors: a.visitors + (b.visitors ?? 0),
    contacts: a.contacts + (b.contacts ?? 0),
    events: a.events + (b.events ?? 0),
    deliveries: a.deliveries + (b.deliveries ?? 0),
  };
}

function chunks<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** One organisation's erasure in steps (a unit of work: made per request run or retention pass, dropped with it). */
export class Eraser {
  constructor(
    private readonly deps: EraserDeps,
    private readonly orgId: OrgId,
    private readonly step: Step,
    private readonly batch = ERASE_BATCH,
  ) {}

  /** Erases the persons wholly (everything above); `at` is the erasure's time (the notices' date). */
  async persons(persons: readonly number[], at: Date): Promise<void> {
    if (persons.length === 0) return;
    const { db, subjects } = this.deps;
    const org = this.orgId;
    const contacts = await contactsOfPersons(db, org, persons);
    const values = contacts.map((c) => c.value);
    const cores = await this.coresOf(persons);
    // 1. the catalogue, while the events that tell what the person viewed are there
    for (const part of chunks(await productSightingsOfVisitors(db, org, cores), this.batch)) {
      await this.step(async (tx) => {
        await forgetProductUrls(tx, org, part, persons);
        return {};
      });
    }
    // 2. events
    for (const part of chunks(cores, this.batch)) await this.events(part);
    // 3. deliveries about the person
    await this.deliveries(values);
    // 4. what earlier exports found about any of the person's identifiers
    const hashes = [...contacts.map((c) => subjects.contact(org, c)), ...cores.map((c) => subjects.coreId(org, c))];
    for (const part of chunks(hashes, this.batch)) {
      await this.step(async (tx) => {
        await dropExportResults(tx, org, part, at);
        return {};
      });
    }
    // 5. the visitors (and any that joined the person meanwhile)
    await this.visitorsOfPersons(persons);
    // 6. contacts, links, and the receivers' notices
    for (;;) {
      let gone = 0;
      await this.step(async (tx) => {
        const erased = await deleteContactsOfPersons(tx, org, persons, this.batch);
        gone = erased.length;
        await noticeErasedContacts(tx, org, erased, at);
        return { contacts: erased.length };
      });
      if (gone < this.batch) break;
    }
    // 7. what a racing identify may have added before its contact went, then the profiles
    await this.deliveries(values);
    await this.visitorsOfPersons(persons);
    // (persons are counted by the caller: one without activity has no profile row to count)
    await this.step(async (tx) => {
      await deletePersons(tx, org, persons);
      return {};
    });
  }

  /** Erases visitors (their events, links and rows) but not their persons: retention, for a person still seen elsewhere. */
  async visitors(coreIds: readonly string[]): Promise<void> {
    for (const part of chunks(coreIds, this.batch)) {
      await this.events(part);
      // before and after: a batch of this process that chose its visitors in between sends these again
      this.deps.freshVisitors?.forget(this.orgId);
      await this.step(async (tx) => {
        await lockVisitors(tx, this.orgId, part);
        // what arrived since the last batch above (usually nothing)
        const events = await deleteEventsOfVisitors(tx, this.orgId, part);
        return { events, visitors: await deleteVisitors(tx, this.orgId, part) };
      });
      // committed: this process's batches send these visitors' touches again (and make them anew)
      this.deps.freshVisitors?.forget(this.orgId);
    }
  }

  /** Every core_id of the persons' visitors. */
  private async coresOf(persons: readonly number[]): Promise<string[]> {
    const out: string[] = [];
    for (let after: string | undefined; ;) {
      const page = await visitorsOfPersons(this.deps.db, this.orgId, persons, 5000, after);
      out.push(...page.map((v) => v.core_id));
      if (page.length < 5000) return out;
      after = page[page.length - 1]!.core_id;
    }
  }

  private async visitorsOfPersons(persons: readonly number[]): Promise<void> {
    for (;;) {
      const page = await visitorsOfPersons(this.deps.db, this.orgId, persons, this.batch);
      if (page.length === 0) return;
      await this.visitors(page.map((v) => v.core_id));
    }
  }

  private async events(coreIds: readonly string[]): Promise<void> {
    for (;;) {
      const done = await this.step(async (tx) => ({ events: await deleteEventsOfVisitors(tx, this.orgId, coreIds, this.batch) }));
      if ((done.events ?? 0) < this.batch) return;
    }
  }

  private async deliveries(contacts: readonly string[]): Promise<void> {
    if (contacts.length === 0) return;
    for (const part of chunks(contacts, this.batch)) {
      for (;;) {
        const done = await this.step(async (tx) => ({ deliveries: await deleteDeliveriesAbout(tx, this.orgId, part, this.batch) }));
        if ((done.deliveries ?? 0) < this.batch) break;
      }
    }
  }
}
