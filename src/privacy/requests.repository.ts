// privacy_requests: Kysely only. Requests are claimed by the runner under a
// lease: `attempts` is the fencing token, so every write of a run names the
// attempt that claimed it and changes nothing once another process has taken
// the request over (its lease having expired). Every statement names its
// organisation, except the search for organisations with due work and for
// expired export results (ALL_ORGANISATIONS, on small partial indexes).
import { type Selectable, sql } from 'kysely';
import { ALL_ORGANISATIONS } from '../db/database.ts';
import { PRIVACY_CHANNEL } from '../db/notifications.ts';
import type { PrivacyCounts, PrivacyRequestsTable, PrivacyRequestType, SubjectType } from '../db/schema.ts';
import { type Executor, orgScoped, type Tx, type OrgId } from '../db/tenancy.ts';

export type RequestRow = Omit<Selectable<PrivacyRequestsTable>, 'subject_enc' | 'person_ids' | 'lease_until' | 'result'> & {
  result?: string | null;
};

const VIEW_COLUMNS = [
  'org_id',
  'id',
  'type',
  'status',
  'suppress',
  'subject_type',
  'subject_hash',
  'requested_by',
  'requested_via',
  'created_at',
  'started_at',
  'finished_at',
  'attempts',
  'counts',
  'result_expires_at',
  'error',
] as const;

export interface NewRequest {
  orgId: OrgId;
  type: PrivacyRequestType;
  suppress: boolean;
  subjectType: SubjectType;
  subjectHash: Buffer;
  /** sealed subject; null for a request done at once */
  subjectEnc: string | null;
  requestedBy: number | null;
  requestedVia: 'api' | 'cli';
  at: Date;
  /** a request done at once (unsuppress) is written finished */
  done: boolean;
}

export async function insertRequest(tx: Tx, r: NewRequest): Promise<RequestRow> {
  return tx
    .insertInto('privacy_requests')
    .values({
      org_id: r.orgId,
      type: r.type,
      status: r.done ? 'done' : 'queued',
      suppress: r.suppress,
      subject_type: r.subjectType,
      subject_hash: r.subjectHash,
      subject_enc: r.subjectEnc,
      requested_by: r.requestedBy,
      requested_via: r.requestedVia,
      created_at: r.at,
      started_at: r.done ? r.at : null,
      finished_at: r.done ? r.at : null,
    })
    .returning(VIEW_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Wakes the runners (on commit). */
export async function announceRequest(tx: Tx, orgId: OrgId): Promise<void> {
  await sql`SELECT pg_notify(${PRIVACY_CHANNEL}, ${String(orgId)})`.execute(tx);
}

/** One request of the organisation, with an export's result when asked for. */
export function findRequest(db: Executor, orgId: OrgId, id: number, withResult = false): Promise<RequestRow | undefined> {
  return orgScoped(db, orgId)
    .selectFrom('privacy_requests')
    .select(VIEW_COLUMNS)
    .$if(withResult, (q) => q.select('result'))
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The organisation's requests, newest first, before id `beforeId` when given. */
export function listRequests(db: Executor, orgId: OrgId, limit: number, beforeId?: number): Promise<RequestRow[]> {
  let q = orgScoped(db, orgId).selectFrom('privacy_requests').select(VIEW_COLUMNS);
  if (beforeId !== undefined) q = q.where('id', '<', beforeId);
  return q.orderBy('id', 'desc').limit(limit).execute();
}

/** Organisations with a request to run (queued, or running under an expired lease), oldest first. */
export async function dueOrganisations(db: Executor, now: Date, limit: number): Promise<OrgId[]> {
  const { rows } = await sql<{ org_id: OrgId }>`${sql.raw(ALL_ORGANISATIONS)}
    SELECT org_id FROM privacy_requests
    WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until <= ${now}::timestamptz)
    GROUP BY org_id ORDER BY min(id) LIMIT ${limit}::int
  `.execute(db);
  return rows.map((r) => r.org_id);
}

export interface ClaimedRequest {
  org_id: OrgId;
  id: number;
  type: PrivacyRequestType;
  suppress: boolean;
  subject_type: SubjectType;
  subject_hash: Buffer;
  subject_enc: string | null;
  /** this claim's number: the fencing token of every write of the run */
  attempts: number;
  person_ids: (number | string)[] | null;
  counts: PrivacyCounts | null;
}

/**
 * Claims the organisation's oldest request to run (or request `onlyId`):
 * queued, or running under an expired lease (its runner died or stalled; the
 * work it committed stays done). One statement within one organisation.
 */
export async function claimNext(db: Executor, orgId: OrgId, now: Date, leaseUntil: Date, onlyId?: number): Promise<ClaimedRequest | undefined> {
  const only = onlyId === undefined ? sql`` : sql`AND x.id = ${onlyId}::bigint`;
  const { rows } = await sql<ClaimedRequest>`
    UPDATE privacy_requests r
    SET status = 'running', attempts = r.attempts + 1, lease_until = ${leaseUntil}::timestamptz,
        started_at = COALESCE(r.started_at, ${now}::timestamptz)
    WHERE r.org_id = ${orgId}::bigint AND r.id = (
      SELECT x.id FROM privacy_requests x
      WHERE x.org_id = ${orgId}::bigint AND x.status IN ('queued', 'running')
        AND (x.lease_until IS NULL OR x.lease_until <= ${now}::timestamptz) ${only}
      ORDER BY x.id LIMIT 1
      FOR UPDATE SKIP LOCKED
    )
    RETURNING r.org_id, r.id, r.type, r.suppress, r.subject_type, r.subject_hash, r.subject_enc, r.attempts, r.person_ids, r.counts
  `.execute(db);
  return rows[0];
}

/** Which run of which request a write belongs to. */
export interface Fence {
  orgId: OrgId;
  id: number;
  attempt: number;
}

/**
 * Moves a running request on under its claim (the lease renewed, the counts
 * and the resolved persons recorded), in the caller's transaction: false
 * when the claim is no longer this run's (the caller must then roll back).
 */
export async function advance(
  tx: Tx,
  fence: Fence,
  change: { leaseUntil: Date; counts?: PrivacyCounts; personIds?: readonly number[] },
): Promise<boolean> {
  const r = await orgScoped(tx, fence.orgId)
    .updateTable('privacy_requests')
    .set({
      lease_until: change.leaseUntil,
      ...(change.counts ? { counts: JSON.stringify(change.counts) } : {}),
      ...(change.personIds ? { person_ids: [...change.personIds] } : {}),
    })
    .where('id', '=', fence.id)
    .where('attempts', '=', fence.attempt)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Hands a claim back (a runner stopping): due again at once, for whichever runner comes next. */
export async function releaseClaim(db: Executor, fence: Fence): Promise<void> {
  await orgScoped(db, fence.orgId)
    .updateTable('privacy_requests')
    .set({ lease_until: null })
    .where('id', '=', fence.id)
    .where('attempts', '=', fence.attempt)
    .where('status', '=', 'running')
    .execute();
}

export interface Outcome {
  status: 'done' | 'failed';
  at: Date;
  counts: PrivacyCounts | null;
  result: string | null;
  resultExpiresAt: Date | null;
  error: string | null;
}

/** Finishes a request under its claim; the sealed subject and the resolved persons go. False when the claim was lost. */
export async function finishRequest(db: Executor, fence: Fence, o: Outcome): Promise<boolean> {
  const r = await orgScoped(db, fence.orgId)
    .updateTable('privacy_requests')
    .set({
      status: o.status,
      finished_at: o.at,
      subject_enc: null,
      person_ids: null,
      lease_until: null,
      counts: o.counts ? JSON.stringify(o.counts) : null,
      result: o.result,
      result_expires_at: o.resultExpiresAt,
      error: o.error,
    })
    .where('id', '=', fence.id)
    .where('attempts', '=', fence.attempt)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Deletes the results of the organisation's exports about any of these subjects (an erasure of the person, at `at`); how many. */
export async function dropExportResults(tx: Tx, orgId: OrgId, hashes: readonly Buffer[], at: Date): Promise<number> {
  if (hashes.length === 0) return 0;
  const r = await sql`
    UPDATE privacy_requests SET result = NULL, result_expires_at = ${at}::timestamptz
    WHERE org_id = ${orgId}::bigint AND type = 'export' AND result IS NOT NULL AND subject_hash = ANY(${hashes}::bytea[])
  `.execute(tx);
  return Number(r.numAffectedRows ?? 0);
}

/** Organisations holding export results past their expiry. */
export async function organisationsWithExpiredResults(db: Executor, now: Date, limit: number): Promise<OrgId[]> {
  const { rows } = await sql<{ org_id: OrgId }>`${sql.raw(ALL_ORGANISATIONS)}
    SELECT DISTINCT org_id FROM privacy_requests WHERE result IS NOT NULL AND result_expires_at <= ${now}::timestamptz LIMIT ${limit}::int
  `.execute(db);
  return rows.map((r) => r.org_id);
}

/** Deletes the organisation's export results past their expiry (result_expires_at stays: when it went); how many. */
export async function dropExpiredResults(db: Executor, orgId: OrgId, now: Date): Promise<number> {
  const r = await orgScoped(db, orgId)
    .updateTable('privacy_requests')
    .set({ result: null })
    .where('result', 'is not', null)
    .where('result_expires_at', '<=', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
