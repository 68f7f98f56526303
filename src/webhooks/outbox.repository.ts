// The transactional outbox: deliveries are written in the same transaction as
// the identify or event that causes them, and the dispatcher is woken by a
// NOTIFY that PostgreSQL sends only when that transaction commits.
import { type Transaction, sql } from 'kysely';
import type { DB } from '../db/schema.ts';

export const DELIVERIES_CHANNEL = 'trackway_deliveries';

export interface NewDelivery {
  orgId: number;
  integrationId: number;
  kind: 'matched' | 'event';
  /** the exact JSON body that will be posted (and signed) */
  body: string;
}

export async function enqueueDeliveries(tx: Transaction<DB>, rows: NewDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  await tx
    .insertInto('deliveries')
    .values(
      rows.map((r) => ({
        org_id: r.orgId,
        integration_id: r.integrationId,
        kind: r.kind,
        body: r.body,
        next_attempt_at: sql<Date>`now()`,
      })),
    )
    .execute();
  await sql`SELECT pg_notify(${DELIVERIES_CHANNEL}, '')`.execute(tx);
}

/** Deactivating or deleting an integration stops what it has not yet delivered. */
export async function cancelPendingDeliveries(tx: Transaction<DB>, orgId: number, integrationId: number): Promise<number> {
  const r = await tx
    .updateTable('deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, last_error: 'integration deactivated or deleted' })
    .where('org_id', '=', orgId)
    .where('integration_id', '=', integrationId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
