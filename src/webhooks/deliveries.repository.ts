// Deliveries as the platform API reads them: Kysely only. Every query is
// scoped to one organisation, or to the organisations assigned to the caller.
import { type Transaction, sql } from 'kysely';
import type { DB, DeliveryKind, DeliveryStatus } from '../db/schema.ts';
import { DELIVERIES_CHANNEL } from '../db/notifications.ts';
import { notifyPayload } from './outbox.repository.ts';
import { type Executor, memberOrganisations, orgScoped, type OrgId } from '../db/tenancy.ts';

const DELIVERY_COLUMNS = [
  'deliveries.org_id',
  'deliveries.id',
  'deliveries.integration_id',
  'deliveries.kind',
  'deliveries.webhook_id',
  'deliveries.body',
  'deliveries.status',
  'deliveries.attempts_count',
  'deliveries.next_attempt_at',
  'deliveries.lease_until',
  'deliveries.created_at',
  'deliveries.delivered_at',
  'deliveries.last_error',
  'deliveries.delivered_attempt_at',
  'deliveries.delivered_status_code',
  'deliveries.delivered_duration_ms',
  'deliveries.delivered_response_excerpt',
] as const;

export interface DeliveryRow {
  org_id: OrgId;
  id: number;
  integration_id: number;
  kind: DeliveryKind;
  webhook_id: string;
  body: string;
  status: DeliveryStatus;
  attempts_count: number;
  next_attempt_at: Date | null;
  /** the lease of a claim (an attempt in flight, or one whose outcome was lost) */
  lease_until: Date | null;
  created_at: Date;
  delivered_at: Date | null;
  last_error: string | null;
  /** the attempt that delivered it, when kept on the row (src/db/migrations/2026-12-01T0100_delivering_attempt.ts) */
  delivered_attempt_at: Date | null;
  delivered_status_code: number | null;
  delivered_duration_ms: number | null;
  delivered_response_excerpt: string | null;
}

export interface AttemptRow {
  delivery_id: number;
  n: number;
  attempted_at: Date;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
}

/** Deliveries of the organisation, newest first, below `beforeId` when given. */
export function listDeliveries(
  db: Executor,
  orgId: OrgId,
  opts: { status?: DeliveryStatus; integrationId?: number; beforeId?: number; limit: number },
): Promise<DeliveryRow[]> {
  let q = orgScoped(db, orgId).selectFrom('deliveries').select(DELIVERY_COLUMNS);
  if (opts.status !== undefined) q = q.where('deliveries.status', '=', opts.status);
  if (opts.integrationId !== undefined) q = q.where('deliveries.integration_id', '=', opts.integrationId);
  if (opts.beforeId !== undefined) q = q.where('deliveries.id', '<', opts.beforeId);
  return q.orderBy('deliveries.id', 'desc').limit(opts.limit).execute();
}

/** A delivery of any organisation assigned to the user, locked for update inside a transaction when asked. */
export async function findMemberDelivery(db: Executor, userId: number, id: number, opts: { lock?: boolean } = {}): Promise<DeliveryRow | undefined> {
  // deliveries are too many for an id -> org lookup table: look in the user's organisations
  // (a reference table), then read (and lock) within the one that holds it
  const orgs = await memberOrganisations(db, userId).execute();
  if (orgs.length === 0) return undefined;
  const owner = await db
    .selectFrom('deliveries')
    .select('org_id')
    .where(
      'org_id',
      'in',
      orgs.map((o) => o.org_id),
    )
    .where('id', '=', id)
    .executeTakeFirst();
  if (!owner) return undefined;
  let q = orgScoped(db, owner.org_id).selectFrom('deliveries').select(DELIVERY_COLUMNS).where('deliveries.id', '=', id);
  if (opts.lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

/**
 * Attempts of these deliveries of the organisation recorded as rows, in the
 * order they were made: every attempt but one that delivered since
 * 2026-12-01, which is on its delivery's row (deliveredAttempt).
 */
export function attemptsOf(db: Executor, orgId: OrgId, deliveryIds: number[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return Promise.resolve([]);
  return orgScoped(db, orgId)
    .selectFrom('delivery_attempts')
    .select(['delivery_id', 'n', 'attempted_at', 'status_code', 'duration_ms', 'error', 'response_excerpt'])
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('n')
    .execute();
}

/**
 * Puts a failed or cancelled delivery back to pending, due now, with a fresh
 * retry schedule (attempt numbers keep counting), and wakes the dispatchers
 * once the transaction commits.
 */
export async function requeueDelivery(tx: Transaction<DB>, orgId: OrgId, id: number): Promise<DeliveryRow | undefined> {
  const row = await orgScoped(tx, orgId)
    .updateTable('deliveries')
    .set((eb) => ({
      status: 'pending',
      next_attempt_at: sql<Date>`now()`,
      schedule_start: eb.ref('attempts_count'),
      delivered_at: null,
    }))
    .where('id', '=', id)
    .where('status', 'in', ['failed', 'cancelled'])
    .returning(DELIVERY_COLUMNS)
    .executeTakeFirst();
  if (row) await sql`SELECT pg_notify(${DELIVERIES_CHANNEL}, ${notifyPayload([orgId])}::text)`.execute(tx);
  return row;
}

/** The attempt that delivered this delivery, when it is kept on the row (the last of its attempts). */
export function deliveredAttempt(row: DeliveryRow): AttemptRow | null {
  if (row.delivered_attempt_at === null) return null;
  return {
    delivery_id: row.id,
    n: row.attempts_count,
    attempted_at: row.delivered_attempt_at,
    status_code: row.delivered_status_code,
    duration_ms: row.delivered_duration_ms ?? 0,
    error: null,
    response_excerpt: row.delivered_response_excerpt,
  };
}
