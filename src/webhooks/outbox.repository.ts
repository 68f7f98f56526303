// The transactional outbox: deliveries are written in the same transaction as
// the identify or event that causes them, and the dispatcher is woken by a
// NOTIFY that PostgreSQL sends only when that transaction commits (naming
// the organisations, which the dispatcher then claims for directly). For an
// integration listed in webhook_backlog_limits (at WEBHOOK_MAX_BACKLOG pending,
// see backlog.worker.ts) they are written failed with BACKLOG_ERROR instead: kept,
// visible and retryable through the API, but not queued.
import { type Transaction, sql } from 'kysely';
import { PREPARE } from '../db/database.ts';
import { DELIVERIES_CHANNEL } from '../db/notifications.ts';
import type { DB } from '../db/schema.ts';
import { orgScoped, type OrgId, parseOrgId } from '../db/tenancy.ts';

/** a NOTIFY names at most this many organisations (beyond, it names none: "scan for due work") */
const MAX_NAMED = 100;

/**
 * The payload of a NOTIFY on DELIVERIES_CHANNEL: the organisations that have
 * new due deliveries, comma-separated, so that the dispatchers claim for
 * them at once without scanning every organisation's backlog; empty means
 * "something is due, look".
 */
export function notifyPayload(orgIds: Iterable<OrgId>): string {
  const ids = [...new Set(orgIds)];
  return ids.length > MAX_NAMED ? '' : ids.join(',');
}

/** The organisations a NOTIFY payload names (none: scan). */
export function parseNotifiedOrganisations(payload: string): OrgId[] {
  if (payload === '') return [];
  const ids = payload.split(',').map(parseOrgId);
  return ids.every((id) => id !== undefined) ? ids : [];
}
export const BACKLOG_ERROR = 'backlog limit reached';

export interface NewDelivery {
  orgId: OrgId;
  integrationId: number;
  kind: 'matched' | 'event';
  /** the exact JSON body that will be posted (and signed) */
  body: string;
  /** the contact the body names (its `contact`): privacy requests find a person's deliveries by it */
  contact: string;
}

/**
 * Writes the deliveries (ids in the order given) and, in the same statement,
 * the NOTIFY that wakes the dispatchers when the transaction commits: one
 * round trip per batch that causes deliveries, not two. A data-modifying CTE
 * runs to completion whether or not the statement reads it.
 */
export async function enqueueDeliveries(tx: Transaction<DB>, rows: NewDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  const orgIds = [...new Set(rows.map((r) => r.orgId))];
  // the limits table is read by its primary key (and usually empty), for the batch's organisations
  // named as a parameter (on Citus, a join by r.org_id alone ran on every shard); a fixed text with
  // array parameters, so it is prepared once per connection
  await sql`${sql.raw(PREPARE)}
    WITH queued AS (
      INSERT INTO deliveries (org_id, integration_id, kind, body, contact, status, next_attempt_at, last_error)
      SELECT r.org_id, r.integration_id, r.kind, r.body, r.contact,
             CASE WHEN l.org_id IS NULL THEN 'pending' ELSE 'failed' END,
             CASE WHEN l.org_id IS NULL THEN now() END,
             CASE WHEN l.org_id IS NOT NULL THEN ${BACKLOG_ERROR} END
      FROM unnest(${rows.map((r) => r.orgId)}::bigint[], ${rows.map((r) => r.integrationId)}::bigint[],
                  ${rows.map((r) => r.kind)}::text[], ${rows.map((r) => r.body)}::text[], ${rows.map((r) => r.contact)}::text[])
           WITH ORDINALITY AS r(org_id, integration_id, kind, body, contact, ord)
      LEFT JOIN webhook_backlog_limits l ON l.org_id = ANY(${orgIds}::bigint[])
        AND l.org_id = r.org_id AND l.integration_id = r.integration_id
      ORDER BY r.ord
    )
    SELECT pg_notify(${DELIVERIES_CHANNEL}, ${notifyPayload(orgIds)}::text)
  `.execute(tx);
}

/** Deactivating or deleting an integration stops what it has not yet delivered. */
export async function cancelPendingDeliveries(tx: Transaction<DB>, orgId: OrgId, integrationId: number): Promise<number> {
  const r = await orgScoped(tx, orgId)
    .updateTable('deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, last_error: 'integration deactivated or deleted' })
    .where('integration_id', '=', integrationId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
