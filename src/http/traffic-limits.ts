// Tracking limits (docs/design.md "Trust"; on by default, config.trackingLimits):
// token buckets (src/http/rate-limit.ts) per client address and, separately,
// per organisation, on the tracking API and on the learning endpoint (one pair
// of limiters for each); on /jsv1 also a tighter budget per client address
// for identifies of identities not seen in the last 30 minutes (identify is
// what creates contacts and contact-match notifications; repeating an
// identity creates nothing, so a shop that identifies signed-in customers on
// every page does not spend it), and a coarser one per IPv6 /48 for the same
// identifies (so that the /64s of one site do not each bring a fresh budget).
// Over a limit: 429 in the area's shape with Retry-After.
//
// A request costs one token per started KiB of its body (at least one), so
// large bodies spend a budget faster than small ones: the bytes one client
// can make Trackway store are bounded, not only its requests.
//
// The organisation is counted only once it is known to exist (an unknown id
// is answered 404/400 first), so made-up ids cannot fill the limiter with
// buckets; client addresses are bounded by the limiter's maxKeys, and an IPv6
// address counts by its /64 (src/http/client-address.ts: every key is made
// from the canonical address, whatever its spelling).
//
// Per process, in memory: N instances behind a load balancer allow up to N
// times the configured rate in all.
import { createHash } from 'node:crypto';
import type { TrackingLimits } from '../config.ts';
import { clientAddressKey, networkKey } from './client-address.ts';
import { type Area, areaError } from './errors.ts';
import { type RateDecision, createRecentKeys, createTokenBucket } from './rate-limit.ts';
import type { OrgId } from '../db/tenancy.ts';

/** Why a tracking request was refused (the `reason` of trackway_tracking_refused_total). */
export type RefusalReason = 'ip_rate_limited' | 'org_rate_limited' | 'identify_rate_limited' | 'too_large' | 'invalid';
export const REFUSAL_REASONS: readonly RefusalReason[] = ['ip_rate_limited', 'org_rate_limited', 'identify_rate_limited', 'too_large', 'invalid'];

/** Bytes per token: a request costs one token per started BODY_BYTES_PER_TOKEN of its body. */
export const BODY_BYTES_PER_TOKEN = 1024;

export function requestCost(bodyBytes: number): number {
  return Math.max(1, Math.ceil(bodyBytes / BODY_BYTES_PER_TOKEN));
}

export interface TrafficLimits {
  /** Counts a request of this client address; throws 429 when it is over the limit. */
  ip(ip: string, cost?: number): void;
  /** Counts a request for this (existing) organisation; throws 429 when it is over the limit. */
  org(orgId: OrgId, cost?: number): void;
  /** An identify of `identity` (its identityKey) from this address: free when the identity was seen recently, else counted; throws 429 over the limit. */
  identify(ip: string, identity: string): void;
  /** Records that `identity` (its identityKey) was identified (after its commit), so repeating it is free for 30 minutes. */
  identified(identity: string): void;
  /** Whether ip(ip, cost) would pass now; charges and counts nothing (the admission checks before it charges). */
  allowsIp(ip: string, cost: number): boolean;
  /** Whether org(orgId, cost) would pass now; charges and counts nothing. */
  allowsOrg(orgId: OrgId, cost: number): boolean;
  /** Whether identify(ip, identity) would pass now; charges and counts nothing. */
  allowsIdentify(ip: string, identity: string): boolean;
}

const REPEAT_WINDOW_MS = 30 * 60_000;

/**
 * 128 bits of sha256: what the recent-identities set keeps per identity
 * (bounded memory whatever the payload). The identify methods below take
 * this key, made once per request by the caller (not once per method).
 */
export const identityKey = (identity: string): string => createHash('sha256').update(identity).digest('base64url').slice(0, 22);

export function createTrafficLimits(
  area: Area,
  limits: TrackingLimits,
  onRefused: (reason: RefusalReason) => void = () => {},
  /** clock in milliseconds (tests simulate time with it) */
  now?: () => number,
): TrafficLimits {
  const byIp = limits.ip && createTokenBucket({ ...limits.ip, now });
  const byOrg = limits.org && createTokenBucket({ ...limits.org, now });
  const identities = limits.identify && createTokenBucket({ ...limits.identify, maxKeys: 50_000, now });
  const networks = limits.identifyNetwork && createTokenBucket({ ...limits.identifyNetwork, maxKeys: 50_000, now });
  const seen = (identities || networks) && createRecentKeys({ ttlMs: REPEAT_WINDOW_MS, maxKeys: 100_000, now });
  /** both identify budgets admit a new identity from this address (charging nothing) */
  const identifyAdmitted = (ip: string) => {
    const net = networkKey(ip);
    return (!identities || identities.allows(clientAddressKey(ip))) && (!networks || net === undefined || networks.allows(net));
  };
  const check = (decision: RateDecision, reason: RefusalReason, what: string) => {
    if (decision.allowed) return;
    onRefused(reason);
    throw areaError(area, 'rate_limited', `Too many ${what}; retry after ${decision.retryAfterSeconds} s`, {
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
    });
  };
  return {
    ip(ip, cost = 1) {
      if (byIp) check(byIp.hit(clientAddressKey(ip), cost), 'ip_rate_limited', 'requests from this client address');
    },
    org(orgId, cost = 1) {
      if (byOrg) check(byOrg.hit(String(orgId), cost), 'org_rate_limited', 'requests for this organisation');
    },
    identify(ip, identity) {
      if (!seen || seen.has(identity)) return;
      const net = networkKey(ip);
      // the /48's budget first, without charging the address's when it refuses
      if (networks && net !== undefined && !networks.allows(net))
        check(networks.hit(net), 'identify_rate_limited', 'new identities from this network');
      if (identities) check(identities.hit(clientAddressKey(ip)), 'identify_rate_limited', 'new identities from this client address');
      if (networks && net !== undefined) networks.hit(net);
    },
    identified(identity) {
      seen?.add(identity);
    },
    allowsIp(ip, cost) {
      return !byIp || byIp.allows(clientAddressKey(ip), cost);
    },
    allowsOrg(orgId, cost) {
      return !byOrg || byOrg.allows(String(orgId), cost);
    },
    allowsIdentify(ip, identity) {
      return !seen || seen.has(identity) || identifyAdmitted(ip);
    },
  };
}
