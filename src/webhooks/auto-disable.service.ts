// Auto-disable (docs/design.md "Trust"): an endpoint that has failed every
// attempt for WEBHOOK_DISABLE_AFTER (5 days by default, as Svix does) is
// disabled: its integration becomes inactive exactly as a deactivation
// through the API does (pending deliveries cancelled, retryable once it is
// active again; every process told), and the time and the reason are kept in
// its health row, which the API and the dashboard show. Re-activating the
// integration clears it. Called by the dispatcher when an outcome write finds
// an endpoint past the limit; the check is repeated under lock, so several
// dispatchers disable it once.
import type { Database } from '../db/database.ts';
import { deactivateIntegration, findIntegration } from './integrations.repository.ts';
import { findDisableDue, markDisabled } from './endpoint-health.repository.ts';
import { cancelPendingDeliveries } from './outbox.repository.ts';
import { announceIntegrationChange } from './targets.service.ts';
import type { OrgId } from '../db/tenancy.ts';

/** 432000000 → "5 days", 90000 → "1.5 minutes". */
export function longDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, unit] of units) {
    if (ms >= size) {
      const n = +(ms / size).toFixed(1);
      return `${n} ${unit}${n === 1 ? '' : 's'}`;
    }
  }
  return `${ms} ms`;
}

export function disabledReason(
  h: { failing_since: Date | null; consecutive_failures: number; last_error: string | null },
  disableAfterMs: number,
): string {
  const since = h.failing_since ? ` (failing since ${h.failing_since.toISOString()}, ${h.consecutive_failures} attempts in a row)` : '';
  const last = h.last_error ? `; last error: ${h.last_error}` : '';
  return `Disabled automatically: no delivery succeeded for ${longDuration(disableAfterMs)}${since}${last}. Activate the integration again once the endpoint works.`;
}

export interface Disabled {
  reason: string;
  /** pending deliveries cancelled */
  cancelled: number;
}

class NotDue extends Error {}

/**
 * Disables the endpoint if it is (still) due; undefined when it is not, or
 * was already. Locks in the order every writer of these rows uses
 * (integration, deliveries, health), so it cannot deadlock with an API
 * change or an outcome write.
 */
export async function disableFailingEndpoint(
  db: Database,
  orgId: OrgId,
  integrationId: number,
  disableAfterMs: number,
): Promise<Disabled | undefined> {
  try {
    return await db.transaction().execute(async (tx) => {
      const integration = await findIntegration(tx, orgId, integrationId, { lock: true });
      if (!integration?.active) return undefined;
      const h = await findDisableDue(tx, orgId, integrationId, disableAfterMs);
      if (!h) return undefined;
      const reason = disabledReason(h, disableAfterMs);
      await deactivateIntegration(tx, orgId, integrationId);
      const cancelled = await cancelPendingDeliveries(tx, orgId, integrationId);
      // a success may have cleared the row meanwhile: then nothing happened
      if (!(await markDisabled(tx, orgId, integrationId, reason, disableAfterMs))) throw new NotDue();
      await announceIntegrationChange(tx, orgId);
      return { reason, cancelled };
    });
  } catch (err) {
    if (err instanceof NotDue) return undefined;
    throw err;
  }
}
