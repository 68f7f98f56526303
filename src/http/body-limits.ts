// The largest body each area reads (the Koa app and the fast path alike).
import type { Area } from './errors.ts';

/**
 * Tracking: 32 KiB. The largest realistic event body, a 100-line cart (the
 * contract's maximum) with shop-like titles and CDN image URLs, is about
 * 25 KB (test/reliability/tracking-limits.test.ts measures it); the per-field
 * caps in the contract bound each field, and this bounds the whole (the
 * fields' caps alone would allow far more).
 */
export const BODY_LIMITS: Record<Area, number> = {
  tracking: 32 * 1024,
  platform: 1024 * 1024,
  analytics: 1024 * 1024,
};
