// The dispatcher's SQL: claim due deliveries under a lease, record attempts
// and their outcomes, give back claims it will not send. Each is one
// statement for a whole batch. The claim is the fencing token: an outcome is
// applied only while `attempts_count` still equals the number the claim gave,
// so a process whose lease expired (and whose delivery was claimed again
// elsewhere) cannot overwrite the newer attempt.
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';

export interface ClaimedDelivery {
  org_id: number;
  id: number;
  integration_id: number;
  kind: 'matched' | 'event';
  webhook_id: string;
  body: string;
  /** the number of this attempt (1-based, counts every attempt ever made) */
  attempts_count: number;
  schedule_start: number;
  endpoint: string;
  auth_token_enc: string | null;
  signing_secret_enc: string;
  http_timeout: number;
  modified_at: Date;
}

export interface ClaimOptions {
  limit: number;
  leaseMarginMs: number;
  /** integrations not to claim for now (their endpoint is saturated in this process) */
  excludeIntegrations: number[];
}

export const LOST_ATTEMPT_ERROR =
  'no outcome recorded: the dispatcher that made this attempt stopped before finishing it (its lease expired)';
export const INACTIVE_ERROR = 'integration deactivated or deleted';

/**
 * Claims up to `limit` due deliveries (oldest due first, skipping rows other
 * dispatchers hold): each gets a lease of its integration's httpTimeout plus
 * the margin and its attempt number. Due deliveries of an inactive or deleted
 * integration are cancelled instead. An attempt left without an outcome by a
 * process that died is recorded as such.
 */
export async function claimDue(db: Database, opts: ClaimOptions): Promise<ClaimedDelivery[]> {
  const margin = opts.leaseMarginMs;
  const { rows } = await sql<ClaimedDelivery>`${sql.raw(PREPARE)}
    WITH due AS (
      SELECT d.org_id, d.id, d.next_attempt_at AS lease_was,
             COALESCE(i.active AND i.deleted_at IS NULL, false) AS live
      FROM deliveries d
      LEFT JOIN integrations i ON i.org_id = d.org_id AND i.id = d.integration_id
      WHERE d.status = 'pending' AND d.next_attempt_at <= now()
        AND d.integration_id <> ALL(${opts.excludeIntegrations}::bigint[])
      ORDER BY d.next_attempt_at
      LIMIT ${opts.limit}
      FOR UPDATE OF d SKIP LOCKED
    ),
    cancelled AS (
      UPDATE deliveries d
      SET status = 'cancelled', next_attempt_at = NULL, last_error = ${INACTIVE_ERROR}
      FROM due
      WHERE d.org_id = due.org_id AND d.id = due.id AND NOT due.live
      RETURNING d.id
    ),
    claimed AS (
      UPDATE deliveries d
      SET attempts_count = d.attempts_count + 1,
          next_attempt_at = now() + (i.http_timeout * 1000 + ${margin}::int) * interval '1 millisecond'
      FROM due, integrations i
      WHERE d.org_id = due.org_id AND d.id = due.id AND due.live
        AND i.org_id = d.org_id AND i.id = d.integration_id
      RETURNING d.org_id, d.id, d.integration_id, d.kind, d.webhook_id, d.body, d.attempts_count,
                d.schedule_start, due.lease_was, i.endpoint, i.auth_token_enc, i.signing_secret_enc,
                i.http_timeout, i.modified_at
    ),
    lost AS (
      INSERT INTO delivery_attempts (org_id, delivery_id, n, attempted_at, status_code, duration_ms, error, response_excerpt)
      SELECT c.org_id, c.id, c.attempts_count - 1,
             c.lease_was - (c.http_timeout * 1000 + ${margin}::int) * interval '1 millisecond',
             NULL, 0, ${LOST_ATTEMPT_ERROR}, NULL
      FROM claimed c
      WHERE c.attempts_count > 1
        AND NOT EXISTS (
          SELECT 1 FROM delivery_attempts a
          WHERE a.org_id = c.org_id AND a.delivery_id = c.id AND a.n = c.attempts_count - 1
        )
      ON CONFLICT DO NOTHING
    )
    SELECT org_id, id, integration_id, kind, webhook_id, body, attempts_count, schedule_start,
           endpoint, auth_token_enc, signing_secret_enc, http_timeout, modified_at
    FROM claimed
  `.execute(db);
  return rows;
}

export type CompletionOutcome = 'delivered' | 'retry' | 'failed' | 'interrupted';

export interface Completion {
  orgId: number;
  id: number;
  /** the attempt number the claim gave */
  n: number;
  outcome: CompletionOutcome;
  /** retry/interrupted: due this many milliseconds after the write */
  delayMs: number;
  /** summary for the delivery's last_error (ignored when delivered) */
  lastError: string | null;
  attemptedAt: Date;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseExcerpt: string | null;
  deliveredAt: Date | null;
}

export interface Applied {
  id: number;
  status: 'pending' | 'delivered' | 'failed' | 'cancelled';
}

/**
 * Records attempts and moves their deliveries on, for a batch. `interrupted`
 * (the dispatcher stopped mid-attempt) is recorded and due again at once
 * without using a step of the schedule. Returns the deliveries it applied to.
 */
export async function completeAttempts(db: Database, batch: Completion[]): Promise<Applied[]> {
  if (batch.length === 0) return [];
  const col = <T>(f: (c: Completion) => T) => batch.map(f);
  const { rows } = await sql<Applied>`${sql.raw(PREPARE)}
    WITH r AS (
      SELECT * FROM unnest(
        ${col((c) => c.orgId)}::bigint[], ${col((c) => c.id)}::bigint[], ${col((c) => c.n)}::int[],
        ${col((c) => c.outcome)}::text[], ${col((c) => Math.max(0, Math.round(c.delayMs)))}::bigint[],
        ${col((c) => c.lastError)}::text[], ${col((c) => c.attemptedAt)}::timestamptz[],
        ${col((c) => c.statusCode)}::int[], ${col((c) => c.durationMs)}::int[], ${col((c) => c.error)}::text[],
        ${col((c) => c.responseExcerpt)}::text[], ${col((c) => c.deliveredAt)}::timestamptz[]
      ) AS r(org_id, id, n, outcome, delay_ms, last_error, attempted_at, status_code, duration_ms, error,
             response_excerpt, delivered_at)
    ),
    u AS (
      UPDATE deliveries d
      SET status = CASE
            WHEN r.outcome = 'delivered' THEN 'delivered'
            WHEN d.status = 'cancelled' THEN 'cancelled'
            WHEN r.outcome = 'failed' THEN 'failed'
            ELSE 'pending' END,
          next_attempt_at = CASE
            WHEN r.outcome IN ('retry', 'interrupted') AND d.status = 'pending'
              THEN now() + r.delay_ms * interval '1 millisecond'
            ELSE NULL END,
          delivered_at = CASE WHEN r.outcome = 'delivered' THEN r.delivered_at ELSE d.delivered_at END,
          last_error = CASE WHEN r.outcome = 'delivered' THEN d.last_error ELSE r.last_error END,
          schedule_start = d.schedule_start + CASE WHEN r.outcome = 'interrupted' THEN 1 ELSE 0 END
      FROM r
      WHERE d.org_id = r.org_id AND d.id = r.id AND d.attempts_count = r.n
        AND d.status IN ('pending', 'cancelled')
      RETURNING d.org_id, d.id, d.status
    ),
    recorded AS (
      INSERT INTO delivery_attempts (org_id, delivery_id, n, attempted_at, status_code, duration_ms, error, response_excerpt)
      SELECT r.org_id, r.id, r.n, r.attempted_at, r.status_code, r.duration_ms, r.error, r.response_excerpt
      FROM u JOIN r ON r.org_id = u.org_id AND r.id = u.id
      ON CONFLICT DO NOTHING
    )
    SELECT id, status FROM u
  `.execute(db);
  return rows;
}

/** Gives claims back unsent (due at once, attempt number restored), e.g. for a saturated endpoint. */
export async function releaseClaims(db: Database, claims: { orgId: number; id: number; n: number }[]): Promise<void> {
  if (claims.length === 0) return;
  await sql`
    UPDATE deliveries d
    SET attempts_count = d.attempts_count - 1, next_attempt_at = now()
    FROM unnest(${claims.map((c) => c.orgId)}::bigint[], ${claims.map((c) => c.id)}::bigint[],
                ${claims.map((c) => c.n)}::int[]) AS r(org_id, id, n)
    WHERE d.org_id = r.org_id AND d.id = r.id AND d.attempts_count = r.n AND d.status = 'pending'
  `.execute(db);
}

/** Deliveries waiting for their first or next attempt (the backlog). */
export async function countPending(db: Database): Promise<number> {
  const row = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
