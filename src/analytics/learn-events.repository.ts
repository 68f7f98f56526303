// learn_events: Kysely only. Every query is scoped to one organisation; the
// primary key (org_id, id) serves both the insert and the newest-first listing.
import type { Database } from '../db/database.ts';
import { orgScoped, type OrgId } from '../db/tenancy.ts';

export interface NewLearnEvent {
  orgId: OrgId;
  eventName: string;
  /** a string or a JSON object, stored as jsonb */
  eventVal: string | Record<string, unknown>;
  eventCategory: string;
  u: string | null;
  lang: string;
}

/** Stores one learning event; `received_at` is the database's now(). */
export async function insertLearnEvent(db: Database, e: NewLearnEvent): Promise<void> {
  await db
    .insertInto('learn_events')
    .values({
      org_id: e.orgId,
      event_name: e.eventName,
      event_val: JSON.stringify(e.eventVal),
      event_category: e.eventCategory,
      u: e.u,
      lang: e.lang,
    })
    .execute();
}

/** One page of an organisation's learning events, newest first, after `beforeId`; `limit + 1` rows to tell whether more follow. */
export function listLearnEvents(db: Database, orgId: OrgId, opts: { beforeId?: number; limit: number }) {
  let query = orgScoped(db, orgId).selectFrom('learn_events').select(['id', 'event_name', 'event_val', 'event_category', 'u', 'lang', 'received_at']);
  if (opts.beforeId !== undefined) query = query.where('id', '<', opts.beforeId);
  return query
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
}
