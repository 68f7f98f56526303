// How one dispatcher process shares its capacity (DESIGN.md §6 "Trust"):
// per integration and per organisation, never per target origin (which a
// tenant chooses and multiplies freely, and which two tenants of one SaaS
// receiver share).
//
// - at most `perIntegration` requests in flight per integration;
// - at most `capacity` deliveries held (in flight plus waiting to start) per
//   integration, adapted to how fast its endpoint answers: a slow or dead
//   endpoint holds no more than it has in flight, a fast one holds enough
//   to keep its requests busy for about `queueMs` (never above the
//   organisation's share);
// - at most `perOrganisation` held per organisation;
// - at most `global` held in all.
//
// An integration or organisation that reaches its cap is "full" and is not
// claimed for until it has drained to half of it, so that a claim brings a
// useful batch instead of one row (and no claim is ever given back for lack
// of room). The claim asks the database for exactly the rooms computed
// here (claims.repository.ts).
import type { ClaimOptions, ClaimedDelivery } from './claims.repository.ts';

export interface FairShareOptions {
  /** requests in flight per integration (default 8) */
  perIntegration: number;
  /** deliveries held per organisation (default 128) */
  perOrganisation: number;
  /** deliveries held by the process (default 512) */
  global: number;
  /** a fast endpoint may hold about this much work beyond its requests in flight (ms, default 1000) */
  queueMs: number;
}

export const DEFAULT_SHARE: FairShareOptions = { perIntegration: 8, perOrganisation: 128, global: 512, queueMs: 1000 };

/** lanes idle this long forget their endpoint's speed */
const IDLE_MS = 600_000;

export interface Job {
  row: ClaimedDelivery;
  lane: Lane;
  /** by this time (ms, this process's clock) the claim's lease may have expired */
  leaseEnd: number;
}

export interface Lane {
  integrationId: number;
  orgId: number;
  active: number;
  queue: Job[];
  held: number;
  full: boolean;
  /** moving average of the endpoint's attempt durations (ms); undefined until one finished */
  ewmaMs: number | undefined;
  usedAt: number;
}

interface OrgShare {
  held: number;
  full: boolean;
}

export interface ShareSnapshot {
  inFlight: number;
  waiting: number;
  organisations: number;
  organisationsFull: number;
  integrationsFull: number;
  /** deliveries held by the organisation holding the most */
  largestOrganisation: number;
}

export class FairShare {
  private readonly lanes = new Map<number, Lane>();
  private readonly orgs = new Map<number, OrgShare>();
  private heldTotal = 0;
  private inFlight = 0;

  constructor(readonly opts: FairShareOptions) {}

  get held(): number {
    return this.heldTotal;
  }

  /** How many more deliveries the process may hold. */
  room(): number {
    return Math.max(0, this.opts.global - this.heldTotal);
  }

  /** Most deliveries the integration may hold now. */
  capacity(lane: Lane): number {
    const p = this.opts.perIntegration;
    if (lane.ewmaMs === undefined) return p;
    const extra = Math.round((p * this.opts.queueMs) / Math.max(1, lane.ewmaMs));
    return p + Math.max(0, Math.min(extra, this.opts.perOrganisation - p));
  }

  /** The rooms a claim may fill (see claimDue). */
  claimRooms(): Pick<ClaimOptions, 'integrationRooms' | 'defaultIntegrationRoom' | 'orgRooms' | 'defaultOrgRoom'> {
    const now = Date.now();
    const integrationRooms: ClaimOptions['integrationRooms'] = [];
    for (const lane of this.lanes.values()) {
      if (lane.held === 0 && now - lane.usedAt > IDLE_MS) {
        this.lanes.delete(lane.integrationId);
        continue;
      }
      const room = lane.full ? 0 : Math.max(0, this.capacity(lane) - lane.held);
      if (room !== this.opts.perIntegration) integrationRooms.push({ id: lane.integrationId, room });
    }
    const orgRooms: ClaimOptions['orgRooms'] = [];
    for (const [id, org] of this.orgs) orgRooms.push({ id, room: org.full ? 0 : Math.max(0, this.opts.perOrganisation - org.held) });
    return {
      integrationRooms,
      defaultIntegrationRoom: this.opts.perIntegration,
      orgRooms,
      defaultOrgRoom: this.opts.perOrganisation,
    };
  }

  /** Takes a claimed delivery in; returns its job (queued in its lane, not started). */
  add(row: ClaimedDelivery, leaseEnd: number): Job {
    let lane = this.lanes.get(row.integration_id);
    if (!lane) {
      lane = { integrationId: row.integration_id, orgId: row.org_id, active: 0, queue: [], held: 0, full: false, ewmaMs: undefined, usedAt: 0 };
      this.lanes.set(row.integration_id, lane);
    }
    let org = this.orgs.get(row.org_id);
    if (!org) {
      org = { held: 0, full: false };
      this.orgs.set(row.org_id, org);
    }
    const job: Job = { row, lane, leaseEnd };
    lane.queue.push(job);
    lane.held++;
    lane.usedAt = Date.now();
    org.held++;
    this.heldTotal++;
    if (lane.held >= this.capacity(lane)) lane.full = true;
    if (org.held >= this.opts.perOrganisation) org.full = true;
    return job;
  }

  /** The next job of the lane that may start now (and counts it in flight), if any. */
  next(lane: Lane): Job | undefined {
    if (lane.active >= this.opts.perIntegration) return undefined;
    const job = lane.queue.shift();
    if (job) {
      lane.active++;
      this.inFlight++;
    }
    return job;
  }

  /**
   * A started job ended after `durationMs` (undefined: it says nothing about
   * the endpoint's speed). True when this reopened its integration or
   * organisation (or the process) to claims.
   */
  finished(job: Job, durationMs: number | undefined): boolean {
    const { lane } = job;
    lane.active--;
    this.inFlight--;
    if (durationMs !== undefined) lane.ewmaMs = lane.ewmaMs === undefined ? durationMs : 0.7 * lane.ewmaMs + 0.3 * durationMs;
    return this.release(job);
  }

  /** Jobs given back without starting (lease too short, stopping): true as for finished(). */
  dropped(jobs: Job[]): boolean {
    let reopened = false;
    for (const job of jobs) reopened = this.release(job) || reopened;
    return reopened;
  }

  /**
   * Whether a claim for the integration (of the organisation) is due now
   * rather than when it drains to half its share: it holds half of it or
   * less (its jobs finished while the claim ran), so no such wake-up is
   * coming.
   */
  wantsMore(orgId: number, integrationId: number): boolean {
    const lane = this.lanes.get(integrationId);
    const org = this.orgs.get(orgId);
    if (org && (org.full || org.held > this.opts.perOrganisation / 2)) return false;
    return !lane || (!lane.full && lane.held <= this.capacity(lane) / 2);
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
    let organisationsFull = 0;
    let largestOrganisation = 0;
    let organisations = 0;
    for (const org of this.orgs.values()) {
      organisations++;
      if (org.full) organisationsFull++;
      largestOrganisation = Math.max(largestOrganisation, org.held);
    }
    let integrationsFull = 0;
    for (const lane of this.lanes.values()) if (lane.full) integrationsFull++;
    return {
      inFlight: this.inFlight,
      waiting: this.heldTotal - this.inFlight,
      organisations,
      organisationsFull,
      integrationsFull,
      largestOrganisation,
    };
  }

  private release(job: Job): boolean {
    const { lane } = job;
    const wasGlobalFull = this.heldTotal >= this.opts.global;
    lane.held--;
    this.heldTotal--;
    lane.usedAt = Date.now();
    const org = this.orgs.get(lane.orgId)!;
    org.held--;
    // worth a claim: the process had no room, or this integration or organisation
    // just drained to half its share (whether or not it had filled it)
    const laneHalf = this.capacity(lane) / 2;
    const orgHalf = this.opts.perOrganisation / 2;
    let reopened = wasGlobalFull || (lane.held <= laneHalf && lane.held + 1 > laneHalf) || (org.held <= orgHalf && org.held + 1 > orgHalf);
    if (lane.full && lane.held <= laneHalf) {
      lane.full = false;
      reopened = true;
    }
    if (org.full && org.held <= orgHalf) {
      org.full = false;
      reopened = true;
    }
    if (org.held === 0) this.orgs.delete(lane.orgId);
    return reopened;
  }
}
