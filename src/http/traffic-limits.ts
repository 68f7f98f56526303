// TRACKING_RATE_LIMIT (`N/window`, off by default, DESIGN §4): at most N
// requests per window per client IP and, separately, per organisation, on the
// tracking API and on the learning endpoint (one pair of limiters for each).
// Over the limit: 429 in the area's shape with Retry-After.
//
// The organisation is counted only once it is known to exist (an unknown id
// is answered 404/400 first), so made-up ids cannot fill the limiter with
// buckets; client IPs are bounded by the limiter's maxKeys.
//
// Per process, in memory (src/http/rate-limit.ts): N instances behind a
// load balancer allow up to N times the configured rate in all.
import type { RateLimit } from '../config.ts';
import { type Area, areaError } from './errors.ts';
import { createRateLimiter } from './rate-limit.ts';

export interface TrafficLimits {
  /** Counts a request of this client IP; throws 429 when it is over the limit. */
  ip(ip: string): void;
  /** Counts a request for this (existing) organisation; throws 429 when it is over the limit. */
  org(orgId: number): void;
}

const OFF: TrafficLimits = { ip() {}, org() {} };

export function createTrafficLimits(area: Area, rate: RateLimit | undefined): TrafficLimits {
  if (!rate) return OFF;
  const byIp = createRateLimiter(rate);
  const byOrg = createRateLimiter(rate);
  const check = (decision: ReturnType<typeof byIp.hit>, who: string) => {
    if (decision.allowed) return;
    throw areaError(area, 'rate_limited', `Too many requests for this ${who}; retry after ${decision.retryAfterSeconds} s`, {
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
    });
  };
  return {
    ip: (ip) => check(byIp.hit(ip), 'client address'),
    org: (orgId) => check(byOrg.hit(String(orgId)), 'organisation'),
  };
}
