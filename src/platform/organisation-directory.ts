// Organisations as other areas need them on their hot paths: is this
// organisation id active (tracking)? Cached per process: positive answers for
// 30 s, unknown ids for 5 s, so a flood of calls for a bogus id cannot reach
// the database more than once per interval.
import type { Database } from '../db/database.ts';

export interface OrganisationDirectory {
  isActive(orgId: number): Promise<boolean>;
  invalidate(orgId: number): void;
}

export function createOrganisationDirectory(db: Database, ttlMs = 30_000, negativeTtlMs = 5_000): OrganisationDirectory {
  const entries = new Map<number, { until: number; active: Promise<boolean> }>();
  return {
    isActive(orgId) {
      const now = Date.now();
      const hit = entries.get(orgId);
      if (hit && hit.until > now) return hit.active;
      if (entries.size > 100_000) entries.clear(); // bound memory under id scans
      const entry = { until: now + ttlMs, active: Promise.resolve(false) };
      entry.active = db
        .selectFrom('organisations')
        .select('is_active')
        .where('id', '=', orgId)
        .executeTakeFirst()
        .then((row) => {
          if (!row?.is_active) entry.until = Date.now() + negativeTtlMs;
          return row?.is_active === true;
        });
      entry.active.catch(() => entries.delete(orgId));
      entries.set(orgId, entry);
      return entry.active;
    },
    invalidate(orgId) {
      entries.delete(orgId);
    },
  };
}
