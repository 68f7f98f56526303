// Small in-memory rate limiters. createRateLimiter (registration): a fixed
// window; createTokenBucket (tracking limits, below): a token bucket, which
// cannot be spent twice at a window edge; createRecentKeys: a bounded set of
// recently seen keys.
//
// The fixed window: at most `limit` hits per key in a fixed
// window that starts at the key's first hit (so `Retry-After` is never longer
// than the window). O(1) per hit (amortised), memory bounded by `maxKeys`.
//
// Every key shares one window length, so the Map's insertion order is also
// the order in which windows end: a window that restarts is re-inserted at
// the back, and expired entries are swept from the front, touching only what
// has expired (frontSweep: in batches). Beyond `maxKeys` live keys the
// oldest windows are dropped first, an eighth of them at a time (keepWithin;
// those keys start over: the limiter fails open for them rather than
// refusing everyone).
//
// Per process: several instances each apply the limit on their own.
//
//   const limiter = createRateLimiter({ limit: 20, windowMs: 3_600_000 });
//   const d = limiter.hit(`ip:${ctx.ip}`);
//   if (!d.allowed) → 429 with `Retry-After: d.retryAfterSeconds`

import { keepWithin } from '../recent-cache.ts';

export interface RateLimitOptions {
  /** hits allowed per window (at least 1) */
  limit: number;
  /** window length in milliseconds */
  windowMs: number;
  /** live keys kept at most (default 100,000) */
  maxKeys?: number;
  /** clock in milliseconds (default: a monotonic clock) */
  now?: () => number;
}

export interface RateDecision {
  allowed: boolean;
  /** hits left in the current window after this one */
  remaining: number;
  /** whole seconds until the key's window ends (0 when allowed) */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /** Counts a hit for `key` unless it is over the limit. */
  hit(key: string): RateDecision;
  /** Forgets a key (its next hit starts a new window). */
  reset(key: string): void;
  /** Live keys held (for tests and metrics). */
  readonly size: number;
}

interface Window {
  start: number;
  count: number;
}

const monotonic = () => performance.now();

/** How often at most a limiter sweeps its expired keys (every read checks expiry itself: a key left a while longer changes no answer). */
export const SWEEP_MS = 1_000;

/**
 * The expiry sweep of a limiter's Map, whose front holds its oldest entries:
 * called before a new key goes in, it drops the expired entries at the front,
 * at most once per SWEEP_MS. The cap is `keepWithin`'s (src/recent-cache.ts),
 * called after the insert: an eighth of the oldest at once. Both in batches,
 * never one entry per insert: V8 keeps a deleted entry as a hole in the Map's
 * table until its next rehash, and every new iterator walks past the holes
 * at the front, so a Map at its cap that forgot one entry per insert cost
 * O(holes) per insert (docs/profiles/recent-keys-sweep.md: the recent
 * identities at 100,000 keys took 27 % of the workers' busy time).
 */
function frontSweep<V>(map: Map<string, V>, expired: (v: V, t: number) => boolean): (t: number) => void {
  let next = -Infinity;
  return (t) => {
    if (t < next) return;
    next = t + SWEEP_MS;
    for (const [key, v] of map) {
      if (!expired(v, t)) break;
      map.delete(key);
    }
  };
}

/** The options with their defaults, checked (both limiters take the same ones). */
function settings(opts: RateLimitOptions): { limit: number; windowMs: number; maxKeys: number; now: () => number } {
  const { limit, windowMs } = opts;
  const maxKeys = opts.maxKeys ?? 100_000;
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('rate limit: limit must be a whole number ≥ 1');
  if (!(windowMs > 0)) throw new RangeError('rate limit: windowMs must be > 0');
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError('rate limit: maxKeys must be a whole number ≥ 1');
  return { limit, windowMs, maxKeys, now: opts.now ?? monotonic };
}

export function createRateLimiter(opts: RateLimitOptions): RateLimiter {
  const { limit, windowMs, maxKeys, now } = settings(opts);

  const windows = new Map<string, Window>();
  const sweep = frontSweep(windows, (w, t) => t - w.start >= windowMs);

  return {
    hit(key) {
      const t = now();
      let w = windows.get(key);
      if (w && t - w.start >= windowMs) {
        windows.delete(key);
        w = undefined;
      }
      if (!w) {
        sweep(t);
        w = { start: t, count: 0 };
        windows.set(key, w);
        keepWithin(windows, maxKeys);
      }
      if (w.count >= limit) {
        const left = w.start + windowMs - t;
        return { allowed: false, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil(left / 1000)) };
      }
      w.count++;
      return { allowed: true, remaining: limit - w.count, retryAfterSeconds: 0 };
    },
    reset(key) {
      windows.delete(key);
    },
    get size() {
      return windows.size;
    },
  };
}

// ---------------------------------------------------------------------------
// A token bucket per key, as GCRA (the generic cell rate algorithm): one
// number per key, the "theoretical arrival time" `tat` at which the key's
// bucket would be full again. `limit` per `windowMs` is the refill rate and
// `limit` the capacity, so a key may burst its whole budget and then goes on
// at limit/windowMs. Unlike the fixed window above, a budget cannot be spent
// twice in a moment at a window edge: over any span of s ms a key gets at
// most limit + limit·s/windowMs. A hit may cost more than one token (the
// tracking limits weigh bodies by size). O(1) per hit (amortised).
//
// Memory: a key's entry is re-inserted at the back of the Map on every hit it
// is allowed, so the front holds the least recently charged keys; an entry
// whose bucket has refilled (tat ≤ now) is the same as no entry and is swept
// from the front (frontSweep). Beyond `maxKeys` live keys the least recently
// charged are dropped, an eighth at a time (keepWithin; they start full
// again: fail open rather than refuse everyone).

export interface TokenBucketLimiter {
  /** Takes `cost` tokens (default 1, at most the capacity) from `key`'s bucket unless it has too few. */
  hit(key: string, cost?: number): RateDecision;
  /** Whether `hit(key, cost)` would be allowed now; takes nothing. */
  allows(key: string, cost?: number): boolean;
  readonly size: number;
}

export function createTokenBucket(opts: RateLimitOptions): TokenBucketLimiter {
  const { limit, windowMs, maxKeys, now } = settings(opts);
  const interval = windowMs / limit; // ms per token
  const tats = new Map<string, number>();
  const sweep = frontSweep(tats, (tat, t) => tat <= t);

  return {
    allows(key, cost = 1) {
      const t = now();
      const tokens = Math.min(Math.max(1, Math.ceil(cost)), limit);
      const held = tats.get(key);
      const from = held !== undefined && held > t ? held : t;
      return !(from + tokens * interval - t > windowMs + 1e-6);
    },
    hit(key, cost = 1) {
      const t = now();
      const tokens = Math.min(Math.max(1, Math.ceil(cost)), limit);
      const held = tats.get(key);
      const from = held !== undefined && held > t ? held : t;
      const next = from + tokens * interval;
      if (next - t > windowMs + 1e-6) {
        const wait = next - windowMs - t;
        return {
          allowed: false,
          remaining: Math.max(0, Math.floor((windowMs - (from - t)) / interval + 1e-9)),
          retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)),
        };
      }
      if (held !== undefined) tats.delete(key);
      else sweep(t);
      tats.set(key, next);
      keepWithin(tats, maxKeys);
      return { allowed: true, remaining: Math.max(0, Math.floor((windowMs - (next - t)) / interval + 1e-9)), retryAfterSeconds: 0 };
    },
    get size() {
      return tats.size;
    },
  };
}

/**
 * Keys seen within the last `ttlMs` (refreshed when seen again), at most
 * `maxKeys` of them (the least recently seen are forgotten first, an eighth
 * at a time). O(1) per call (amortised); expired keys are swept from the
 * front of the Map (frontSweep).
 */
export interface RecentKeys {
  has(key: string): boolean;
  add(key: string): void;
  readonly size: number;
}

export function createRecentKeys(opts: { ttlMs: number; maxKeys?: number; now?: () => number }): RecentKeys {
  const maxKeys = opts.maxKeys ?? 100_000;
  const now = opts.now ?? monotonic;
  const until = new Map<string, number>();
  const sweep = frontSweep(until, (u, t) => u <= t);
  return {
    has(key) {
      const u = until.get(key);
      return u !== undefined && u > now();
    },
    add(key) {
      const t = now();
      if (!until.delete(key)) sweep(t);
      until.set(key, t + opts.ttlMs);
      keepWithin(until, maxKeys);
    },
    get size() {
      return until.size;
    },
  };
}
