// The suppression list (privacy_suppressions): keyed hashes of the subjects
// an organisation must not track (src/privacy/subject-hash.crypto.ts). Kysely only.
import { sql } from 'kysely';
import { PREPARE } from '../db/database.ts';
import { type Executor, orgScoped, type OrgId } from '../db/tenancy.ts';

/**
 * Which of `hashes` are on the organisation's suppression list: one
 * statement naming the organisation, of fixed text (prepared once per
 * connection), for the tracking path.
 */
export async function suppressedAmong(db: Executor, orgId: OrgId, hashes: readonly Buffer[]): Promise<Buffer[]> {
  if (hashes.length === 0) return [];
  const { rows } = await sql<{ subject_hash: Buffer }>`${sql.raw(PREPARE)}
    SELECT subject_hash FROM privacy_suppressions WHERE org_id = ${orgId}::bigint AND subject_hash = ANY(${hashes}::bytea[])
  `.execute(db);
  return rows.map((r) => r.subject_hash);
}

/** Whether the organisation's list holds anything (an organisation without one costs its identifies no lookup). */
export async function hasSuppressions(db: Executor, orgId: OrgId): Promise<boolean> {
  const row = await orgScoped(db, orgId).selectFrom('privacy_suppressions').select('org_id').limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Puts a hash on the list (kept as it is when it is there already); whether it is new. */
export async function addSuppression(db: Executor, orgId: OrgId, hash: Buffer, requestId: number, at: Date): Promise<boolean> {
  const r = await db
    .insertInto('privacy_suppressions')
    .values({ org_id: orgId, subject_hash: hash, request_id: requestId, created_at: at })
    .onConflict((oc) => oc.columns(['org_id', 'subject_hash']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Takes a hash off the list; whether it was there. */
export async function removeSuppression(db: Executor, orgId: OrgId, hash: Buffer): Promise<boolean> {
  const r = await orgScoped(db, orgId).deleteFrom('privacy_suppressions').where('subject_hash', '=', hash).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The organisation's list, newest first (by the request that made each entry), before request `beforeRequestId` when given. */
export function listSuppressions(db: Executor, orgId: OrgId, limit: number, beforeRequestId?: number) {
  let q = orgScoped(db, orgId)
    .selectFrom('privacy_suppressions as s')
    .innerJoin('privacy_requests as r', (j) => j.onRef('r.org_id', '=', 's.org_id').onRef('r.id', '=', 's.request_id'))
    .select(['s.request_id', 's.created_at', 'r.subject_type']);
  if (beforeRequestId !== undefined) q = q.where('s.request_id', '<', beforeRequestId);
  return q.orderBy('s.request_id', 'desc').limit(limit).execute();
}
