// The visitors this process wrote or found fresh lately: the plain batch
// (src/tracking/plain-batch.service.ts) leaves out of its visitors upsert a
// touch the upsert would leave unwritten anyway. A returning visitor that
// changed nothing and was written less than VISITOR_TOUCH_SECONDS ago is
// not rewritten (visitors-upsert.repository.ts worthAWrite), but the upsert
// still sends it, probes the primary key and locks the row; left out, it
// costs PostgreSQL nothing (BENCHMARKS.md, "Fresh visitors left out").
//
// What the process knows, from the rows its upsert returned:
// - a visitor it sent and the upsert returned (inserted or rewrote) is stored
//   with this touch's values and a last_seen at least the touch's: a later
//   touch with the same roaming_id, a user agent and location absent or the
//   same, no corex_id, no name, not forced, and at most VISITOR_TOUCH_SECONDS
//   later would not be written. Exact: the upsert's own rule.
// - a visitor it sent and the upsert did not return was found fresh and
//   unchanged (its last_seen at most VISITOR_TOUCH_SECONDS old): the same
//   touches are left out for VISITOR_SEEN_FRESH_SECONDS more. So a visitor's
//   last_seen lags its latest event by at most VISITOR_TOUCH_SECONDS +
//   VISITOR_SEEN_FRESH_SECONDS (70 s instead of 60), and a visitor that
//   several processes see is sent by each about once per that grace instead
//   of with every event (each process knows only its own writes).
// What it cannot see is another process's write of the same visitor since:
// that one stays, as two concurrent touches leave either one today.
//
// The row must still exist, and only deleting a visitor takes it away: an
// erasure (src/privacy/eraser.service.ts, visitor retention included) calls
// forget for its organisation in its own process and sends
// `trackway_visitors` (VISITORS_CHANNEL) with its commit, on which every
// other process forgets the organisation's visitors (webhooks/runtime.worker.ts
// listens). Until that notification arrives, a batch of another process
// may still leave an erased visitor out: its events are stored and the
// visitor is made again by that visitor's next batch (as a concurrent batch
// makes a new one today, person-erasure.repository.ts lockVisitors).
import type { Location } from '../db/schema.ts';
import { keepWithin } from '../recent-cache.ts';
import type { OrgId } from '../db/tenancy.ts';
import { VISITOR_TOUCH_SECONDS, type VisitorTouch } from './visitors-upsert.repository.ts';

/** Visitors remembered per process at most (the oldest written are forgotten first, an eighth of them at a time): about 550 bytes of heap each (user agent and location kept), about 5.5 MB in all. */
export const FRESH_VISITORS_MAX = 10_000;

/** How long a visitor the upsert found fresh (and left unwritten) is left out of the next batches. */
export const VISITOR_SEEN_FRESH_SECONDS = 10;

interface Entry {
  roamingId: string;
  userAgent: string | null;
  /** the location as written */
  location: Location | null;
  /** touches up to this last_seen (ms) are left out */
  until: number;
}

/** an organisation id as a number or as pg returns a bigint (text): the same key */
const key = (orgId: OrgId | string, coreId: string) => `${orgId}\u0000${coreId}`;
const FRESH_MS = VISITOR_TOUCH_SECONDS * 1000;
const SEEN_FRESH_MS = VISITOR_SEEN_FRESH_SECONDS * 1000;

/** The same location as jsonb compares it (the geo locator hands out a copy per request): field by field. */
function sameLocation(a: Location, b: Location | null): boolean {
  if (b === null) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    if (x[k] !== y[k]) return false;
    n++;
  }
  for (const _ in y) n--;
  return n === 0;
}

/** A touch the upsert's condition may leave unwritten (visitors-upsert.repository.ts): the only kind remembered or left out. */
const plain = (t: VisitorTouch) => !t.force && t.corexId === null && (t.name === undefined || t.name === null);

export class FreshVisitors {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly max = FRESH_VISITORS_MAX) {}

  get size(): number {
    return this.entries.size;
  }

  /** Whether this touch is left out: what this process wrote or found of the visitor is fresh and the same (above). */
  unchanged(t: VisitorTouch): boolean {
    if (!plain(t)) return false;
    const e = this.entries.get(key(t.orgId, t.coreId));
    return (
      e !== undefined &&
      t.lastSeen.getTime() <= e.until &&
      t.roamingId === e.roamingId &&
      (t.userAgent === null || t.userAgent === e.userAgent) &&
      (t.location === null || sameLocation(t.location, e.location))
    );
  }

  /**
   * What a batch sends: the touches (`send`: all but those left out,
   * unchanged) and the visitors with a mark (`marked`: a view or cart of the
   * batch) among those left out (`held`). Their person is needed under their
   * row lock: the statement reads it with a share lock (a key probe per
   * visitor, plain PostgreSQL only: src/identity/profile-upsert.repository.ts)
   * instead of sending them to the upsert, which would rewrite each with its
   * own values to return it. With `sendMarked` (Citus, where a locking read
   * must name one organisation) a marked visitor is always sent, and `held`
   * is empty. `markedSent`: a marked visitor is among `send` (the upsert
   * must then hold the unchanged ones to return them).
   */
  toSend(
    touches: VisitorTouch[],
    marked: readonly { orgId: OrgId; coreId: string }[],
    sendMarked: boolean,
  ): { send: VisitorTouch[]; held: VisitorTouch[]; markedSent: boolean } {
    if (this.entries.size === 0) return { send: touches, held: [], markedSent: marked.length > 0 };
    const withMark = new Set(marked.map((m) => key(m.orgId, m.coreId)));
    const send: VisitorTouch[] = [];
    const held: VisitorTouch[] = [];
    let markedSent = false;
    for (const t of touches) {
      const hasMark = withMark.size > 0 && withMark.has(key(t.orgId, t.coreId));
      if (this.unchanged(t)) {
        if (!hasMark) continue; // left out
        if (!sendMarked) {
          held.push(t);
          continue;
        }
      }
      send.push(t);
      markedSent ||= hasMark;
    }
    return { send, held, markedSent };
  }

  /**
   * After its statement committed: the touches it sent (`sent`) and the
   * visitor rows its upsert returned (`written`). A row returned with a
   * last_seen older than its touch's was held, not written (visitorsUpsert's
   * `hold`, in a batch with marks): found fresh, as one not returned.
   */
  wrote(sent: readonly VisitorTouch[], written: readonly { org_id: OrgId | string; core_id: string; last_seen?: Date }[]): void {
    // every touch sent was written (new visitors, no marks): no lookup
    const rows =
      written.length === sent.length && written.every((w) => w.last_seen === undefined)
        ? undefined
        : new Map(written.map((w) => [key(w.org_id, w.core_id), w.last_seen?.getTime() ?? Infinity]));
    for (const t of sent) {
      const k = key(t.orgId, t.coreId);
      const before = this.entries.get(k);
      const stored = rows?.get(k);
      if (rows && (stored === undefined || stored < t.lastSeen.getTime())) {
        // found fresh and unchanged (a forced or corex_id touch is always written, so returned)
        if (!plain(t)) continue;
        // stored last_seen >= what any earlier entry counted on (it only grows): the later bound holds
        this.remember(k, t, before, Math.max(t.lastSeen.getTime() + SEEN_FRESH_MS, before?.until ?? 0));
      } else this.remember(k, t, before, t.lastSeen.getTime() + FRESH_MS);
    }
  }

  /** The row as the upsert left it: the touch's values, those it lacks kept (COALESCE); newest last, the oldest first to go. */
  private remember(k: string, t: VisitorTouch, before: Entry | undefined, until: number): void {
    this.entries.delete(k);
    this.entries.set(k, {
      roamingId: t.roamingId,
      userAgent: t.userAgent ?? before?.userAgent ?? null,
      location: t.location ?? before?.location ?? null,
      until,
    });
    keepWithin(this.entries, this.max);
  }

  /** Written by another kind of batch (a transaction, identifies): what this process wrote of them no longer says what is stored. */
  forgetVisitors(visitors: readonly { orgId: OrgId; coreId: string }[]): void {
    if (this.entries.size === 0) return;
    for (const v of visitors) this.entries.delete(key(v.orgId, v.coreId));
  }

  /** The organisation's visitors may have been deleted: nothing about them is taken as stored. */
  forget(orgId: OrgId): void {
    const prefix = `${orgId}\u0000`;
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
  }

  clear(): void {
    this.entries.clear();
  }
}
