// SQL of the outbox backlog bound (backlog.worker.ts): pending deliveries counted
// per live integration, stopping at the bound, and the table of integrations
// at the bound that the outbox insert reads (outbox.repository.ts).
import { sql } from 'kysely';
import { ALL_ORGANISATIONS, type Database } from '../db/database.ts';
import type { Executor, Tx, OrgId } from '../db/tenancy.ts';
import { activeIntegrationKeys } from './integrations.repository.ts';

export interface Backlog {
  org_id: OrgId;
  integration_id: number;
  /** pending deliveries, counted up to the bound */
  pending: number;
}

/** One process at a time brings the limits table up to date (the others skip a round). */
const LOCK_KEY = 7_361_902_114;

export async function tryLockLimits(tx: Tx): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}::bigint) AS ok`.execute(tx);
  return rows[0]?.ok === true;
}

/**
 * Live integrations with pending deliveries, each counted up to `bound`
 * (one probe of the partial index deliveries_pending_org per
 * integration, never more than `bound` entries read for one).
 */
export async function countBacklogs(db: Executor, bound: number): Promise<Backlog[]> {
  const { rows } = await sql<Backlog>`${sql.raw(ALL_ORGANISATIONS)}
    SELECT i.org_id, i.id AS integration_id, c.n AS pending
    FROM ${activeIntegrationKeys(db)} AS i
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n
      FROM (SELECT 1 FROM deliveries d WHERE d.org_id = i.org_id AND d.integration_id = i.id AND d.status = 'pending' LIMIT ${bound}) x
    ) c
    WHERE c.n > 0
    ORDER BY i.org_id, i.id
  `.execute(db);
  return rows;
}

/**
 * Makes the limits table list exactly `atBound`; returns the integrations
 * added to it and those removed from it.
 */
export async function replaceLimits(
  tx: Tx,
  atBound: Backlog[],
): Promise<{ added: Backlog[]; removed: Pick<Backlog, 'org_id' | 'integration_id'>[] }> {
  const orgs = atBound.map((b) => b.org_id);
  const ids = atBound.map((b) => b.integration_id);
  const removed = await sql<Pick<Backlog, 'org_id' | 'integration_id'>>`${sql.raw(ALL_ORGANISATIONS)}
    DELETE FROM webhook_backlog_limits l
    WHERE NOT EXISTS (
      SELECT 1 FROM unnest(${orgs}::bigint[], ${ids}::bigint[]) AS k(org_id, integration_id)
      WHERE k.org_id = l.org_id AND k.integration_id = l.integration_id
    )
    RETURNING l.org_id, l.integration_id
  `.execute(tx);
  if (atBound.length === 0) return { added: [], removed: removed.rows };
  // the rows (and the time) as a CTE and EXCLUDED, no parameter in ON CONFLICT: under Citus an INSERT … SELECT
  // from parameters is planned apart from its ON CONFLICT, where a parameter's type is then unknown
  const upserted = await sql<Backlog & { inserted: boolean }>`
    WITH k AS (
      SELECT * FROM unnest(${orgs}::bigint[], ${ids}::bigint[], ${atBound.map((b) => b.pending)}::int[]) AS k(org_id, integration_id, pending)
    )
    INSERT INTO webhook_backlog_limits (org_id, integration_id, pending, checked_at)
    SELECT org_id, integration_id, pending, ${new Date()}::timestamptz FROM k
    ON CONFLICT (org_id, integration_id) DO UPDATE SET pending = excluded.pending, checked_at = excluded.checked_at
    RETURNING org_id, integration_id, pending, (xmax = 0) AS inserted
  `.execute(tx);
  return {
    added: upserted.rows.filter((r) => r.inserted).map(({ org_id, integration_id, pending }) => ({ org_id, integration_id, pending })),
    removed: removed.rows,
  };
}

/** The integrations currently at the bound (as the last check left them). */
export function listLimits(db: Executor): Promise<Backlog[]> {
  return db
    .selectFrom('webhook_backlog_limits')
    .modifyFront(sql.raw(ALL_ORGANISATIONS))
    .select(['org_id', 'integration_id', 'pending'])
    .orderBy('org_id')
    .orderBy('integration_id')
    .execute();
}

/** With the bound turned off nothing may stay limited. */
export async function clearLimits(db: Database): Promise<void> {
  await sql`${sql.raw(ALL_ORGANISATIONS)}DELETE FROM webhook_backlog_limits`.execute(db);
}
