// Reading and retrying deliveries through the platform API. An organisation
// not assigned to the caller is 403 when named in the path; a delivery of one
// is 404, exactly like a missing delivery.
import type { Deps } from '../deps.ts';
import type { DeliveryStatus } from '../db/schema.ts';
import { platformError } from '../http/errors.ts';
import { cursorNumber, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.service.ts';
import {
  type AttemptRow,
  type DeliveryRow,
  attemptsOf,
  deliveredAttempt,
  findMemberDelivery,
  listDeliveries as listRows,
  requeueDelivery,
} from './deliveries.repository.ts';
import { integrationIsLive } from './integrations.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

export type Delivery = Schemas['Delivery'];

function notFound() {
  return platformError(404, 4040, 'Delivery not found');
}

function toAttempt(a: AttemptRow): Delivery['attempts'][number] {
  return {
    attempted_at: a.attempted_at.toISOString(),
    status_code: a.status_code,
    duration_ms: a.duration_ms,
    error: a.error,
    response_excerpt: a.response_excerpt,
  };
}

/** A pending delivery is attempted (again) once it is due and any lease it holds has run out: an attempt in flight shows its lease's end. */
function nextAttemptAt(due: Date, lease: Date | null): Date {
  return lease !== null && lease > due ? lease : due;
}

function toDelivery(row: DeliveryRow, recorded: AttemptRow[]): Delivery {
  const delivering = deliveredAttempt(row);
  const attempts = delivering ? [...recorded, delivering] : recorded;
  return {
    id: row.id,
    org_id: row.org_id,
    integration_id: row.integration_id,
    kind: row.kind,
    webhook_id: row.webhook_id,
    status: row.status,
    attempts_count: row.attempts_count,
    next_attempt_at: row.status === 'pending' && row.next_attempt_at ? nextAttemptAt(row.next_attempt_at, row.lease_until).toISOString() : null,
    created_at: row.created_at.toISOString(),
    delivered_at: row.delivered_at ? row.delivered_at.toISOString() : null,
    last_error: row.last_error,
    payload: JSON.parse(row.body) as Delivery['payload'],
    attempts: attempts.map(toAttempt),
  };
}

async function withAttempts(deps: Pick<Deps, 'db'>, orgId: OrgId, rows: DeliveryRow[]): Promise<Delivery[]> {
  const attempts = await attemptsOf(
    deps.db,
    orgId,
    rows.map((r) => r.id),
  );
  const byDelivery = new Map<number, AttemptRow[]>();
  for (const a of attempts) {
    let list = byDelivery.get(a.delivery_id);
    if (!list) byDelivery.set(a.delivery_id, (list = []));
    list.push(a);
  }
  return rows.map((r) => toDelivery(r, byDelivery.get(r.id) ?? []));
}

export interface ListQuery {
  status?: DeliveryStatus;
  integration_id?: number;
  cursor?: string;
  limit?: number;
}

export async function listDeliveries(deps: Pick<Deps, 'db'>, principal: Principal, orgId: OrgId, query: ListQuery): Promise<Schemas['DeliveryList']> {
  await requireOrganisation(deps.db, principal, orgId);
  const limit = pageLimit(query.limit);
  const filters = { list: 'deliveries', org_id: orgId, status: query.status ?? null, integration_id: query.integration_id ?? null };
  const after = decodeCursor(query.cursor, filters);
  const rows = await listRows(deps.db, orgId, {
    status: query.status,
    integrationId: query.integration_id,
    beforeId: after ? cursorNumber(after, 'id') : undefined,
    limit: limit + 1,
  });
  const pageOf = toPage(rows, limit, (last) => ({ id: last.id }), filters);
  return { items: await withAttempts(deps, orgId, pageOf.rows), next_cursor: pageOf.next_cursor };
}

export async function getDelivery(deps: Pick<Deps, 'db'>, principal: Principal, id: number): Promise<Delivery> {
  const row = await findMemberDelivery(deps.db, principal.userId, id);
  if (!row) throw notFound();
  const [delivery] = await withAttempts(deps, row.org_id, [row]);
  return delivery!;
}

/**
 * A failed or cancelled delivery goes back to pending, due now, with a fresh
 * schedule and the same webhook-id. Anything else is 409; so is a delivery
 * whose integration is inactive or deleted (it would only be cancelled again).
 */
export async function retryDelivery(deps: Pick<Deps, 'db'>, principal: Principal, id: number): Promise<Delivery> {
  return deps.db.transaction().execute(async (tx) => {
    const row = await findMemberDelivery(tx, principal.userId, id, { lock: true });
    if (!row) throw notFound();
    if (row.status !== 'failed' && row.status !== 'cancelled') {
      throw platformError(409, 4090, `Delivery is ${row.status}; only failed or cancelled deliveries can be retried`);
    }
    if (!(await integrationIsLive(tx, row.org_id, row.integration_id))) {
      throw platformError(409, 4090, 'The integration is inactive or deleted; activate it before retrying its deliveries');
    }
    const requeued = await requeueDelivery(tx, row.org_id, row.id);
    if (!requeued) throw notFound();
    // answered as committed, before any dispatcher can pick it up
    const [delivery] = await withAttempts({ db: tx }, row.org_id, [requeued]);
    return delivery!;
  });
}
