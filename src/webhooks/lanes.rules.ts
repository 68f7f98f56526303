// One integration's lane in a dispatcher process (fair-share.rules.ts): its jobs,
// how many requests it may have in flight and how many deliveries it may
// hold. A slow endpoint (attempts longer than `slowMs` on average, or a
// request in flight for longer) gets `perIntegration × slowMs / time`
// requests in flight, at least 1: an endpoint that answers 200 after 29 s
// holds one slot, not eight. A fast one may hold enough beyond its requests
// in flight to keep them busy for about `queueMs`.
import type { ClaimedDelivery } from './claims.repository.ts';
import { type HostSplit, partOf } from './host-split.rules.ts';
import type { OrgId } from '../db/tenancy.ts';

export interface LaneOptions {
  perIntegration: number;
  perOrganisation: number;
  slowMs: number;
  queueMs: number;
  /** one of the host's dispatchers (host-split.rules.ts): the lane is its part of the host's */
  split?: HostSplit | undefined;
}

export interface Job {
  row: ClaimedDelivery;
  lane: Lane;
  /** by this time (ms, this process's clock) the claim's lease may have expired */
  leaseEnd: number;
  /** held from the reserve rather than the pool */
  reserve: boolean;
  /** when its attempt started (ms), once it has */
  startedAt: number | undefined;
}

export interface Lane {
  integrationId: number;
  orgId: OrgId;
  active: number;
  /** started jobs whose attempt has not ended */
  running: Set<Job>;
  queue: Job[];
  held: number;
  full: boolean;
  /** had more due than the last claim took from it */
  more: boolean;
  /** moving average of the endpoint's attempt durations (ms); undefined until one finished */
  ewmaMs: number | undefined;
  usedAt: number;
}

export function newLane(integrationId: number, orgId: OrgId): Lane {
  return { integrationId, orgId, active: 0, running: new Set(), queue: [], held: 0, full: false, more: false, ewmaMs: undefined, usedAt: 0 };
}

/**
 * Requests the integration may have in flight now: fewer when its endpoint
 * is slow. One of the host's dispatchers takes its part of the host's limit
 * (0 for a slow endpoint whose host limit is below the dispatchers' count).
 */
export function laneLimit(lane: Lane, opts: LaneOptions): number {
  const p = opts.split?.perIntegration ?? opts.perIntegration;
  const t = Math.max(lane.ewmaMs ?? 0, oldestAge(lane.running));
  const host = t <= opts.slowMs ? p : Math.max(1, Math.min(p, Math.floor((p * opts.slowMs) / t)));
  return opts.split ? partOf(host, opts.split.index, opts.split.count) : host;
}

/** Most deliveries the integration may hold now (in flight and waiting). */
export function laneCapacity(lane: Lane, opts: LaneOptions): number {
  const limit = laneLimit(lane, opts);
  if (lane.ewmaMs === undefined || limit < opts.perIntegration) return limit;
  const extra = Math.round((limit * opts.queueMs) / Math.max(1, lane.ewmaMs));
  return limit + Math.max(0, Math.min(extra, opts.perOrganisation - limit));
}

/** The moving average of attempt durations (ms). */
export const average = (prev: number | undefined, ms: number) => (prev === undefined ? ms : 0.7 * prev + 0.3 * ms);

/** How long the oldest of these started jobs has been in flight (ms; 0 when none). */
export function oldestAge(running: Set<Job>): number {
  let oldest = Infinity;
  for (const j of running) if (j.startedAt !== undefined && j.startedAt < oldest) oldest = j.startedAt;
  return oldest === Infinity ? 0 : Date.now() - oldest;
}
