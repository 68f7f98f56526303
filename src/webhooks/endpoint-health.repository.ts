// webhook_endpoint_health outside the dispatcher's hot statements (those are
// in claims.repository.ts and outcomes.repository.ts): the reads behind an
// integration's `health`, clearing it, the auto-disable's row, the paused
// gauge. Kysely only; every query is scoped by organisation.
import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import { ALL_ORGANISATIONS, type Database } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import type { HealthRow } from './circuit-breaker.rules.ts';
import { orgScoped, type Executor, type OrgId } from '../db/tenancy.ts';

const HEALTH_COLUMNS = [
  'org_id',
  'integration_id',
  'consecutive_failures',
  'failing_since',
  'last_error',
  'opened_count',
  'paused_until',
  'disabled_at',
  'disabled_reason',
] as const;

/** The health rows of some integrations of one organisation (a missing one is healthy). */
export async function readEndpointHealth(db: Executor, orgId: OrgId, integrationIds: number[]): Promise<Map<number, HealthRow>> {
  if (integrationIds.length === 0) return new Map();
  const rows = await orgScoped(db, orgId)
    .selectFrom('webhook_endpoint_health')
    .select(HEALTH_COLUMNS)
    .where('integration_id', 'in', integrationIds)
    .execute();
  return new Map(rows.map((r) => [r.integration_id, r]));
}

/** Forgets an endpoint's failures, pause and disabling (re-activation, a new endpoint, deletion). */
export async function clearEndpointHealth(tx: Transaction<DB>, orgId: OrgId, integrationId: number): Promise<void> {
  await orgScoped(tx, orgId).deleteFrom('webhook_endpoint_health').where('integration_id', '=', integrationId).execute();
}

/** The endpoint's row if it has failed every attempt for at least `disableAfterMs` and is not disabled yet. */
export function findDisableDue(tx: Transaction<DB>, orgId: OrgId, integrationId: number, disableAfterMs: number) {
  return orgScoped(tx, orgId)
    .selectFrom('webhook_endpoint_health')
    .select(HEALTH_COLUMNS)
    .where('integration_id', '=', integrationId)
    .where('disabled_at', 'is', null)
    .where('failing_since', '<=', sql<Date>`now() - ${disableAfterMs}::bigint * interval '1 millisecond'`)
    .executeTakeFirst();
}

/** Marks the endpoint disabled if it still is due (no success meanwhile); false otherwise. */
export async function markDisabled(
  tx: Transaction<DB>,
  orgId: OrgId,
  integrationId: number,
  reason: string,
  disableAfterMs: number,
): Promise<boolean> {
  const r = await orgScoped(tx, orgId)
    .updateTable('webhook_endpoint_health')
    .set({ disabled_at: sql<Date>`now()`, disabled_reason: reason, opened_count: 0, paused_until: null, updated_at: sql<Date>`now()` })
    .where('integration_id', '=', integrationId)
    .where('disabled_at', 'is', null)
    .where('failing_since', '<=', sql<Date>`now() - ${disableAfterMs}::bigint * interval '1 millisecond'`)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Active endpoints paused by their circuit breaker right now (every organisation: an operator's gauge). */
export async function countPausedEndpoints(db: Database): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoint_health as h')
    .innerJoin('integrations as i', (j) => j.onRef('i.org_id', '=', 'h.org_id').onRef('i.id', '=', 'h.integration_id'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('h.opened_count', '>', 0)
    .where('h.disabled_at', 'is', null)
    .where('i.active', '=', true)
    .where('i.deleted_at', 'is', null)
    .modifyFront(sql.raw(ALL_ORGANISATIONS))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
