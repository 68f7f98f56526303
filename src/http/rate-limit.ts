// A small in-memory rate limiter: at most `limit` hits per key in a fixed
// window that starts at the key's first hit (so `Retry-After` is never longer
// than the window). O(1) per hit, memory bounded by `maxKeys`.
//
// Every key shares one window length, so the Map's insertion order is also
// the order in which windows end: a window that restarts is re-inserted at
// the back, and expired entries are swept from the front, touching only what
// has expired. When more than `maxKeys` keys are live at once, the oldest
// windows are dropped first (those keys start over: the limiter fails open for
// them rather than refusing everyone).
//
// Per process: several instances each apply the limit on their own.
//
//   const limiter = createRateLimiter({ limit: 20, windowMs: 3_600_000 });
//   const d = limiter.hit(`ip:${ctx.ip}`);
//   if (!d.allowed) → 429 with `Retry-After: d.retryAfterSeconds`

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

export function createRateLimiter(opts: RateLimitOptions): RateLimiter {
  const { limit, windowMs } = opts;
  const maxKeys = opts.maxKeys ?? 100_000;
  const now = opts.now ?? monotonic;
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('rate limit: limit must be a whole number ≥ 1');
  if (!(windowMs > 0)) throw new RangeError('rate limit: windowMs must be > 0');
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError('rate limit: maxKeys must be a whole number ≥ 1');

  const windows = new Map<string, Window>();

  /** Drops expired windows from the front; then the oldest while over `room`. */
  function sweep(t: number, room: number): void {
    for (const [key, w] of windows) {
      if (t - w.start < windowMs && windows.size <= room) break;
      windows.delete(key);
    }
  }

  return {
    hit(key) {
      const t = now();
      let w = windows.get(key);
      if (w && t - w.start >= windowMs) {
        windows.delete(key);
        w = undefined;
      }
      if (!w) {
        sweep(t, maxKeys - 1);
        w = { start: t, count: 0 };
        windows.set(key, w);
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
