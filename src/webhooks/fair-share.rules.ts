// How one dispatcher process shares its capacity between organisations and
// their integrations (docs/webhook-fairness.md has the whole reasoning; the k
// dispatchers of one host each apply their part of the caps, host-split.rules.ts).
// The unit of sharing is the organisation, whoever owns it, never the target
// origin (a tenant chooses and multiplies those freely).
//
// - The capacity (`global`, deliveries held: in flight or waiting to start)
//   is a shared pool of `global - reserve` plus a reserve of `reserve`.
// - The pool is divided max-min fairly between the organisations that have
//   due work now (holding some here, or known to have more due): one that
//   wants less than an equal part keeps what it wants, the rest is split
//   equally between the others, at most `perOrganisation` each. Work
//   conserving: an organisation alone may use the whole pool.
// - The reserve serves organisations that hold nothing: such an
//   organisation gets one slot at once even while the others fill the pool
//   (unless its own endpoints were slow lately: then it waits for its part
//   of the pool like everyone else).
// - A share counts deliveries held, so a request costs its organisation a
//   slot for as long as it waits: 29 s to a 200 cost what a timeout costs.
// - Per integration: at most `perIntegration` requests in flight, fewer for
//   an endpoint that is slow (its attempts take longer than `slowMs` on
//   average, or its oldest request in flight has): `perIntegration × slowMs /
//   time`, at least 1. A fast endpoint may hold enough beyond its requests
//   in flight to keep them busy for about `queueMs`.
//
// An integration that reaches its cap is "full" and is not claimed for until
// it has drained to half of it, so that a claim brings a useful batch.
import type { ClaimedDelivery } from './claims.repository.ts';
import type { HostSplit } from './host-split.rules.ts';
import { type Job, type Lane, average, laneCapacity, laneLimit, newLane, oldestAge } from './lanes.rules.ts';
import { maxMinShares } from './max-min.rules.ts';
import type { OrgId } from '../db/tenancy.ts';

export type { Job, Lane } from './lanes.rules.ts';

export interface FairShareOptions {
  /** requests in flight per integration (default 8) */
  perIntegration: number;
  /** most deliveries one organisation may hold, even alone (default: the pool, global − reserve) */
  perOrganisation: number;
  /** deliveries held by the process (default 512) */
  global: number;
  /** part of `global` kept for organisations holding nothing (default 64) */
  reserve: number;
  /** an endpoint slower than this (ms) gets a smaller lane (default 2000) */
  slowMs: number;
  /** a fast endpoint may hold about this much work beyond its requests in flight (ms, default 1000) */
  queueMs: number;
  /** one of a host's dispatchers: the caps above are its parts, lanes its part of the host's (host-split.rules.ts) */
  split?: HostSplit | undefined;
}

export const DEFAULT_SHARE: FairShareOptions = {
  perIntegration: 8,
  perOrganisation: 448,
  global: 512,
  reserve: 64,
  slowMs: 2000,
  queueMs: 1000,
};

/**
 * A full pool is refilled in batches: while its room is below this part of
 * it (an eighth: 56 of 448), a claim would bring back little for a statement
 * that costs about the same whatever it brings back, and the dispatcher lets
 * attempts free more first (dispatcher.worker.ts, docs/webhook-fairness.md).
 * The pool's counterpart of a lane's "full until drained to half". The same
 * part is what a backlog's outcomes gather to before they are written
 * (completions.worker.ts): the outcome statement costs the same way.
 */
const CLAIM_PART_OF_POOL = 8;

/** lanes and organisations idle this long forget their endpoints' speed */
const IDLE_MS = 600_000;
/** at most this many idle organisations are remembered (their speed) */
const MAX_REMEMBERED = 100_000;

interface Org {
  id: OrgId;
  held: number;
  reserveHeld: number;
  running: Set<Job>;
  lanes: Set<Lane>;
  /** known to have due deliveries this process does not hold, in integrations without a lane marked `more` */
  more: boolean;
  /** moving average of its attempt durations (ms), all integrations */
  ewmaMs: number | undefined;
  usedAt: number;
}

/** What an organisation may claim now, and from where. */
export interface Room {
  room: number;
  reserve: boolean;
}

export interface ShareSnapshot {
  inFlight: number;
  waiting: number;
  /** deliveries held from the reserve */
  reserveHeld: number;
  /** organisations holding deliveries here */
  organisations: number;
  /** organisations with due work: holding some here or known to have more due */
  organisationsDue: number;
  /** organisations holding at least their fair share while more of theirs is due */
  organisationsFull: number;
  integrationsFull: number;
  /** integrations whose lane is smaller than perIntegration because their endpoint is slow */
  integrationsSlow: number;
  /** deliveries held by the organisation holding the most */
  largestOrganisation: number;
  /** what an organisation that wants more than an equal part may hold now */
  fairShare: number;
}

export class FairShare {
  private readonly lanes = new Map<number, Lane>();
  private readonly orgs = new Map<OrgId, Org>();
  private shares = new Map<OrgId, number>();
  private level: number;
  private heldTotal = 0;
  private reserveHeld = 0;
  private inFlight = 0;
  /** organisations that wanted more than their share at the last refresh */
  private waitingForShare = 0;

  constructor(readonly opts: FairShareOptions) {
    this.level = this.pool;
  }

  private get pool(): number {
    return this.opts.global - this.opts.reserve;
  }

  /** The pool has room for less than 1 / CLAIM_PART_OF_POOL of it: worth letting attempts free more before claiming. */
  poolNearlyFull(): boolean {
    return this.room().pool < this.poolPart();
  }

  /** A batch worth one statement, claimed or written: 1 / CLAIM_PART_OF_POOL of the pool (56 of 448). */
  poolPart(): number {
    return Math.max(1, Math.floor(this.pool / CLAIM_PART_OF_POOL));
  }

  /**
   * The pool holds at least poolPart() deliveries: a backlog is being worked,
   * so more attempts will end within milliseconds (their outcomes are worth
   * gathering into one statement).
   */
  holdsBacklog(): boolean {
    return this.heldTotal - this.reserveHeld >= this.poolPart();
  }

  /** How many more deliveries the process may hold: in the pool, and in the reserve. */
  room(): { pool: number; reserve: number } {
    return {
      pool: Math.max(0, this.pool - (this.heldTotal - this.reserveHeld)),
      reserve: Math.max(0, this.opts.reserve - this.reserveHeld),
    };
  }

  /** Organisations known to have due work here (a NOTIFY, a scan, a claim that was cut). */
  due(orgIds: Iterable<OrgId>): void {
    const now = Date.now();
    for (const id of orgIds) {
      const org = this.org(id, now);
      org.more = true;
    }
  }

  /**
   * Divides the pool max-min fairly between the organisations with due
   * work (call before computing rooms; a claim round does it twice: before
   * its scan and after learning which organisations are due).
   */
  refresh(): void {
    const now = Date.now();
    const wanting: { id: OrgId; want: number }[] = [];
    for (const org of this.orgs.values()) {
      // a lane left to the host's other dispatchers (its part is 0 here) wants nothing here
      if (this.opts.split) for (const lane of org.lanes) if (lane.more && this.capacity(lane) === 0) lane.more = false;
      const more = wantsMore(org);
      if (org.held > 0 || more) {
        wanting.push({ id: org.id, want: Math.min(this.opts.perOrganisation, more ? Infinity : org.held) });
      } else if (now - org.usedAt > IDLE_MS || this.orgs.size > MAX_REMEMBERED) {
        // it holds nothing, so neither do its lanes: they go with it
        for (const lane of org.lanes) this.lanes.delete(lane.integrationId);
        this.orgs.delete(org.id);
      }
    }
    const { shares, level } = maxMinShares(wanting, this.pool, this.opts.perOrganisation);
    this.shares = shares;
    this.level = level;
    this.waitingForShare = 0;
    for (const org of this.orgs.values()) if (wantsMore(org) && this.roomFor(org.id).room === 0) this.waitingForShare++;
  }

  /** What the organisation may claim now (from its fair share of the pool, else one slot of the reserve). */
  roomFor(orgId: OrgId): Room {
    const org = this.orgs.get(orgId);
    const held = org?.held ?? 0;
    const share = this.shares.get(orgId) ?? 0;
    const fromPool = Math.min(share - held, this.opts.perOrganisation - held, this.room().pool);
    if (fromPool > 0) return { room: fromPool, reserve: false };
    if (held === 0 && this.room().reserve > 0 && !this.isSlow(org)) return { room: 1, reserve: true };
    return { room: 0, reserve: false };
  }

  /** Organisations with more due that could take some now, fewest held relative to their share first, fast before slow. */
  wanting(): OrgId[] {
    const list = [...this.orgs.values()].filter((o) => this.claimable(o));
    const key = (o: Org) => o.held / Math.max(1, this.shares.get(o.id) ?? 0);
    list.sort((a, b) => key(a) - key(b) || (a.ewmaMs ?? 0) - (b.ewmaMs ?? 0) || a.id - b.id);
    return list.map((o) => o.id);
  }

  /** Organisations that could not take a delivery now (a scan passes them by). */
  withoutRoom(): OrgId[] {
    return [...this.orgs.keys()].filter((id) => this.roomFor(id).room === 0);
  }

  /** Whether an organisation with more due could take some now. */
  anyClaimable(): boolean {
    for (const org of this.orgs.values()) if (this.claimable(org)) return true;
    return false;
  }

  /**
   * A claim for the organisation asked for `asked` and got `got` (its rows
   * taken in already); `cut` lists its integrations that had more. When it
   * got less than it asked, every integration it could take from gave all
   * it had due, except those cut.
   */
  claimed(orgId: OrgId, asked: number, got: number, cut: number[], rooms: { id: number; room: number }[]): void {
    const org = this.orgs.get(orgId);
    if (!org) return;
    const closed = new Set(rooms.filter((r) => r.room <= 0).map((r) => r.id));
    const wasCut = new Set(cut);
    for (const lane of org.lanes) if (!closed.has(lane.integrationId)) lane.more = wasCut.has(lane.integrationId);
    org.more = got >= asked;
  }

  /**
   * Rooms of the organisation's integrations that differ from perIntegration
   * (for the claim). Walks the organisation's own lanes only (a round claims
   * for many organisations), forgetting those idle for IDLE_MS; an idle
   * organisation's lanes go with it in refresh().
   */
  integrationRooms(orgId: OrgId): { id: number; room: number }[] {
    const rooms: { id: number; room: number }[] = [];
    const org = this.orgs.get(orgId);
    if (!org) return rooms;
    const now = Date.now();
    for (const lane of org.lanes) {
      if (lane.held === 0 && !lane.more && now - lane.usedAt > IDLE_MS) {
        this.lanes.delete(lane.integrationId);
        org.lanes.delete(lane);
        continue;
      }
      const room = lane.full ? 0 : Math.max(0, this.capacity(lane) - lane.held);
      if (room !== this.opts.perIntegration) rooms.push({ id: lane.integrationId, room });
    }
    return rooms;
  }

  /** Requests the integration may have in flight now: fewer when its endpoint is slow. */
  laneLimit(lane: Lane): number {
    return laneLimit(lane, this.opts);
  }

  /** Most deliveries the integration may hold now (in flight and waiting). */
  capacity(lane: Lane): number {
    return laneCapacity(lane, this.opts);
  }

  /** Takes a claimed delivery in; returns its job (queued in its lane, not started). */
  add(row: ClaimedDelivery, leaseEnd: number, reserve: boolean): Job {
    const now = Date.now();
    let lane = this.lanes.get(row.integration_id);
    if (!lane) {
      lane = newLane(row.integration_id, row.org_id);
      this.lanes.set(row.integration_id, lane);
    }
    const org = this.org(row.org_id, now);
    org.lanes.add(lane);
    const job: Job = { row, lane, leaseEnd, reserve, startedAt: undefined };
    lane.queue.push(job);
    lane.held++;
    lane.usedAt = now;
    org.held++;
    this.heldTotal++;
    if (reserve) {
      org.reserveHeld++;
      this.reserveHeld++;
    }
    if (lane.held >= this.capacity(lane)) lane.full = true;
    return job;
  }

  /**
   * The next job of the lane that may start now (and counts it in flight), if
   * any. `extra`: jobs it may have beyond its limit, handed to a sender that
   * applies the limit itself (dispatcher.worker.ts handoff); they count in
   * flight from then on.
   */
  next(lane: Lane, extra = 0): Job | undefined {
    if (lane.active >= this.laneLimit(lane) + extra) return undefined;
    const job = lane.queue.shift();
    if (job) {
      lane.active++;
      this.inFlight++;
      job.startedAt = Date.now();
      lane.running.add(job);
      this.orgs.get(lane.orgId)?.running.add(job);
    }
    return job;
  }

  /**
   * A started job ended after `durationMs` (undefined: it says nothing about
   * the endpoint's speed). True when a claim may now find room it did not
   * have (the dispatcher then claims again).
   */
  finished(job: Job, durationMs: number | undefined): boolean {
    const { lane } = job;
    lane.active--;
    this.inFlight--;
    lane.running.delete(job);
    const org = this.orgs.get(lane.orgId);
    org?.running.delete(job);
    if (durationMs !== undefined) {
      lane.ewmaMs = average(lane.ewmaMs, durationMs);
      if (org) org.ewmaMs = average(org.ewmaMs, durationMs);
    }
    return this.release(job);
  }

  /** Jobs given back without starting (lease too short, stopping): true as for finished(). */
  dropped(jobs: Job[]): boolean {
    let reopened = false;
    for (const job of jobs) reopened = this.release(job) || reopened;
    return reopened;
  }

  /** The integration's lane, while this process holds or recently held its deliveries. */
  laneOf(integrationId: number): Lane | undefined {
    return this.lanes.get(integrationId);
  }

  /** Removes and returns the jobs of an integration that have not started (its breaker opened). */
  takeWaiting(integrationId: number): Job[] {
    const lane = this.lanes.get(integrationId);
    return lane ? lane.queue.splice(0) : [];
  }

  /** Removes and returns every job that has not started. */
  takeAllWaiting(): Job[] {
    return [...this.lanes.values()].flatMap((lane) => lane.queue.splice(0));
  }

  snapshot(): ShareSnapshot {
    let organisations = 0;
    let organisationsDue = 0;
    let organisationsFull = 0;
    let largestOrganisation = 0;
    for (const org of this.orgs.values()) {
      if (org.held > 0) organisations++;
      const more = wantsMore(org);
      if (org.held > 0 || more) organisationsDue++;
      if (more && org.held > 0 && org.held >= (this.shares.get(org.id) ?? 0)) organisationsFull++;
      largestOrganisation = Math.max(largestOrganisation, org.held);
    }
    let integrationsFull = 0;
    let integrationsSlow = 0;
    for (const lane of this.lanes.values()) {
      if (lane.full) integrationsFull++;
      if (lane.held > 0 && this.laneLimit(lane) < this.opts.perIntegration) integrationsSlow++;
    }
    return {
      inFlight: this.inFlight,
      waiting: this.heldTotal - this.inFlight,
      reserveHeld: this.reserveHeld,
      organisations,
      organisationsDue,
      organisationsFull,
      integrationsFull,
      integrationsSlow,
      largestOrganisation,
      fairShare: this.level,
    };
  }

  /** More of its work is due and it may take some now (room, and an integration that is not full or not known). */
  private claimable(org: Org): boolean {
    if (this.roomFor(org.id).room <= 0) return false;
    if (org.more) return true;
    for (const lane of org.lanes) if (lane.more && !lane.full && this.capacity(lane) > 0) return true;
    return false;
  }

  /** Slow lately: its attempts took longer than slowMs on average, or one in flight has. */
  private isSlow(org: Org | undefined): boolean {
    if (!org) return false;
    return (org.ewmaMs ?? 0) > this.opts.slowMs || oldestAge(org.running) > this.opts.slowMs;
  }

  private org(id: OrgId, now: number): Org {
    let org = this.orgs.get(id);
    if (!org) {
      org = { id, held: 0, reserveHeld: 0, running: new Set(), lanes: new Set(), more: false, ewmaMs: undefined, usedAt: now };
      this.orgs.set(id, org);
    }
    org.usedAt = now;
    return org;
  }

  private release(job: Job): boolean {
    const { lane } = job;
    const before = this.room();
    lane.held--;
    this.heldTotal--;
    lane.usedAt = Date.now();
    const org = this.orgs.get(lane.orgId);
    if (org) {
      org.held--;
      org.usedAt = lane.usedAt;
      if (job.reserve) org.reserveHeld--;
    }
    if (job.reserve) this.reserveHeld--;
    let reopened = false;
    if (lane.full && lane.held <= this.capacity(lane) / 2) {
      lane.full = false;
      reopened = true;
    }
    // worth a claim: the pool or the reserve had no room, this organisation can take
    // more now, or another wanted more than its share (which may have grown)
    if ((before.pool === 0 && !job.reserve) || (before.reserve === 0 && job.reserve)) return true;
    return (org !== undefined && (reopened || org.held === 0) && this.claimable(org)) || this.waitingForShare > 0;
  }
}

function wantsMore(org: Org): boolean {
  if (org.more) return true;
  for (const lane of org.lanes) if (lane.more) return true;
  return false;
}
