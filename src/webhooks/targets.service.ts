// Which integrations of an organisation receive notifications: active, not
// deleted, with their do_events/do_contacts switches. Read on every event, so
// cached per organisation; a change to an organisation's integrations
// invalidates its entry (in this process directly, in others through the
// `trackway_integrations` NOTIFY channel), and entries expire after a few
// seconds as a fallback.
import type { Database } from '../db/database.ts';
import { listActiveTargets } from './integrations.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

export { announceIntegrationChange } from './targets.repository.ts';
export { INTEGRATIONS_CHANNEL } from '../db/notifications.ts';

export interface Target {
  id: number;
  doEvents: boolean;
  doContacts: boolean;
}

export interface TargetCache {
  forOrg(orgId: OrgId): Promise<Target[]>;
  invalidate(orgId: OrgId): void;
  /** drops every entry (after notifications may have been missed) */
  clear(): void;
}

export function createTargetCache(db: Database, ttlMs = 5_000): TargetCache {
  const entries = new Map<OrgId, { at: number; targets: Promise<Target[]> }>();
  return {
    forOrg(orgId) {
      const hit = entries.get(orgId);
      const now = Date.now();
      if (hit && now - hit.at < ttlMs) return hit.targets;
      const targets = listActiveTargets(db, orgId).then((rows) => rows.map((r) => ({ id: r.id, doEvents: r.do_events, doContacts: r.do_contacts })));
      entries.set(orgId, { at: now, targets });
      targets.catch(() => entries.delete(orgId));
      return targets;
    },
    invalidate(orgId) {
      entries.delete(orgId);
    },
    clear() {
      entries.clear();
    },
  };
}
