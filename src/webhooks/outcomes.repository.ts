// The dispatcher's outcome write: records a batch of attempts, moves their
// deliveries on (applied only while `attempts_count` still equals the attempt
// number the claim gave: the fencing token), and moves each endpoint's
// circuit breaker on (webhook_endpoint_health, circuit-breaker.rules.ts), all in one
// statement. A healthy endpoint costs the breaker nothing but a primary-key
// probe: its row only exists while it fails. An attempt that delivers is
// written into its delivery's row (the delivered_* columns), which the
// outcome updates anyway; the others are rows of delivery_attempts
// (src/db/migrations/2026-12-01T0100_delivering_attempt.ts says why).
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import type { BreakerOptions, EndpointOutcome } from './circuit-breaker.rules.ts';
import type { OrgId } from '../db/tenancy.ts';

export type CompletionOutcome = 'delivered' | 'retry' | 'failed' | 'interrupted';

/** An attempt that failed (to be retried, or for good); an interrupted one says nothing about its endpoint. */
export function isFailure(outcome: CompletionOutcome): boolean {
  return outcome === 'retry' || outcome === 'failed';
}

export interface Completion {
  orgId: OrgId;
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

/** An endpoint whose breaker row this write changed (and is still failing). */
export interface HealthChange {
  org_id: OrgId;
  integration_id: number;
  consecutive_failures: number;
  /** > 0: the breaker is open (paused, or half-open once paused_until passed) */
  opened_count: number;
  paused_until: Date | null;
  /** the breaker opened (or opened again) with this write */
  opened_now: boolean;
  /** failing for WEBHOOK_DISABLE_AFTER: to be disabled */
  disable_due: boolean;
  last_error: string | null;
}

export interface CompletionResult {
  applied: Applied[];
  health: HealthChange[];
  /** endpoints whose breaker this write closed (a success after it had opened) */
  resumed: { org_id: OrgId; integration_id: number }[];
}

export interface BreakerSettings extends BreakerOptions {
  /** undefined: never disable */
  disableAfterMs: number | undefined;
}

/**
 * Records attempts and moves their deliveries on, for a batch. `interrupted`
 * (the dispatcher stopped mid-attempt) is recorded and due again at once
 * without using a step of the schedule. `endpoints` (circuit-breaker.rules.ts
 * summarise) moves the breakers on: a success deletes the row, failures
 * count up and open it at the threshold, a failed probe opens it again for
 * twice as long.
 */
export async function completeAttempts(
  db: Database,
  batch: Completion[],
  endpoints: EndpointOutcome[],
  breaker: BreakerSettings,
): Promise<CompletionResult> {
  const result: CompletionResult = { applied: [], health: [], resumed: [] };
  if (batch.length === 0) return result;
  // one statement per organisation (one shard under Citus), all at the same time; where a
  // time depends on a column it is to_timestamp(epoch + …) (immutable): Citus refuses
  // timestamptz arithmetic on columns in UPDATE SET
  const now = new Date();
  const orgs = [...new Set(batch.map((c) => c.orgId))];
  for (const org of orgs) {
    const r = await completeAttemptsIn(
      db,
      org,
      now,
      batch.filter((c) => c.orgId === org),
      endpoints.filter((e) => e.orgId === org),
      breaker,
    );
    result.applied.push(...r.applied);
    result.health.push(...r.health);
    result.resumed.push(...r.resumed);
  }
  return result;
}

async function completeAttemptsIn(
  db: Database,
  org: OrgId,
  now: Date,
  batch: Completion[],
  endpoints: EndpointOutcome[],
  breaker: BreakerSettings,
): Promise<CompletionResult> {
  const col = <T>(f: (c: Completion) => T) => batch.map(f);
  const ep = <T>(f: (e: EndpointOutcome) => T) => endpoints.map(f);
  const { rows } = await sql<{
    applied: Applied[];
    health: (Omit<HealthChange, 'paused_until'> & { paused_until: string | null })[];
    resumed: CompletionResult['resumed'];
  }>`${sql.raw(PREPARE)}
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
              THEN to_timestamp(${now.getTime() / 1000}::float8 + r.delay_ms / 1000.0)
            ELSE NULL END,
          delivered_at = CASE WHEN r.outcome = 'delivered' THEN r.delivered_at ELSE d.delivered_at END,
          last_error = CASE WHEN r.outcome = 'delivered' THEN d.last_error ELSE r.last_error END,
          schedule_start = d.schedule_start + CASE WHEN r.outcome = 'interrupted' THEN 1 ELSE 0 END,
          lease_until = NULL,
          delivered_attempt_at = CASE WHEN r.outcome = 'delivered' THEN r.attempted_at ELSE d.delivered_attempt_at END,
          delivered_status_code = CASE WHEN r.outcome = 'delivered' THEN r.status_code ELSE d.delivered_status_code END,
          delivered_duration_ms = CASE WHEN r.outcome = 'delivered' THEN r.duration_ms ELSE d.delivered_duration_ms END,
          delivered_response_excerpt = CASE WHEN r.outcome = 'delivered' THEN r.response_excerpt ELSE d.delivered_response_excerpt END
      FROM r
      WHERE d.org_id = ${org}::bigint AND d.id = r.id AND d.attempts_count = r.n
        AND d.status IN ('pending', 'cancelled')
      RETURNING d.org_id, d.id, d.status
    ),
    recorded AS (
      INSERT INTO delivery_attempts (org_id, delivery_id, n, attempted_at, status_code, duration_ms, error, response_excerpt)
      SELECT r.org_id, r.id, r.n, r.attempted_at, r.status_code, r.duration_ms, r.error, r.response_excerpt
      FROM u JOIN r ON r.org_id = u.org_id AND r.id = u.id
      WHERE r.outcome <> 'delivered'
      ON CONFLICT DO NOTHING
    ),
    hs AS (
      SELECT * FROM unnest(
        ${ep((e) => e.orgId)}::bigint[], ${ep((e) => e.integrationId)}::bigint[], ${ep((e) => e.ok)}::boolean[],
        ${ep((e) => e.fails)}::int[], ${ep((e) => e.firstFailAt)}::timestamptz[], ${ep((e) => e.lastFailAt)}::timestamptz[],
        ${ep((e) => e.lastError)}::text[], ${ep((e) => e.probeFailed)}::boolean[]
      ) AS hs(org_id, integration_id, ok, fails, first_fail_at, last_fail_at, last_error, probe_failed)
    ),
    healed AS (
      DELETE FROM webhook_endpoint_health h
      USING hs
      WHERE h.org_id = ${org}::bigint AND h.integration_id = hs.integration_id
        AND hs.ok AND hs.fails = 0 AND h.disabled_at IS NULL
      RETURNING h.org_id, h.integration_id, h.opened_count > 0 AS was_open
    ),
    changed AS (
      UPDATE webhook_endpoint_health h
      SET consecutive_failures = CASE WHEN hs.ok THEN hs.fails ELSE h.consecutive_failures + hs.fails END,
          failing_since = CASE WHEN hs.ok THEN hs.first_fail_at ELSE COALESCE(h.failing_since, hs.first_fail_at) END,
          last_failure_at = hs.last_fail_at,
          last_error = hs.last_error,
          opened_count = CASE
            WHEN hs.ok THEN CASE WHEN hs.fails >= ${breaker.threshold}::int THEN 1 ELSE 0 END
            WHEN h.opened_count = 0 THEN CASE WHEN h.consecutive_failures + hs.fails >= ${breaker.threshold}::int THEN 1 ELSE 0 END
            WHEN hs.probe_failed THEN h.opened_count + 1
            ELSE h.opened_count END,
          paused_until = CASE
            WHEN hs.ok THEN CASE WHEN hs.fails >= ${breaker.threshold}::int
              THEN ${new Date(now.getTime() + breaker.cooldownMs)}::timestamptz END
            WHEN h.opened_count = 0 THEN CASE WHEN h.consecutive_failures + hs.fails >= ${breaker.threshold}::int
              THEN ${new Date(now.getTime() + breaker.cooldownMs)}::timestamptz END
            WHEN hs.probe_failed
              THEN to_timestamp(${now.getTime() / 1000}::float8 + least(${breaker.cooldownMs}::float8 * 2 ^ h.opened_count, ${breaker.maxCooldownMs}::float8) / 1000.0)
            ELSE h.paused_until END,
          updated_at = ${now}::timestamptz
      FROM hs, webhook_endpoint_health prev
      WHERE h.org_id = ${org}::bigint AND h.integration_id = hs.integration_id AND hs.fails > 0 AND h.disabled_at IS NULL
        AND prev.org_id = ${org}::bigint AND prev.integration_id = h.integration_id
      RETURNING h.org_id, h.integration_id, h.consecutive_failures, h.opened_count, h.paused_until, h.failing_since,
                h.last_error, h.opened_count > 0 AND h.paused_until IS DISTINCT FROM prev.paused_until AS opened_now
    ),
    created AS (
      INSERT INTO webhook_endpoint_health AS h
        (org_id, integration_id, consecutive_failures, failing_since, last_failure_at, last_error, opened_count, paused_until)
      SELECT hs.org_id, hs.integration_id, hs.fails, hs.first_fail_at, hs.last_fail_at, hs.last_error,
             CASE WHEN hs.fails >= ${breaker.threshold}::int THEN 1 ELSE 0 END,
             CASE WHEN hs.fails >= ${breaker.threshold}::int THEN ${new Date(now.getTime() + breaker.cooldownMs)}::timestamptz END
      FROM hs
      WHERE hs.fails > 0
        AND NOT EXISTS (SELECT 1 FROM webhook_endpoint_health x WHERE x.org_id = ${org}::bigint AND x.integration_id = hs.integration_id)
      -- created by another process meanwhile: add the failures (its next failure opens it if due)
      ON CONFLICT (org_id, integration_id) DO UPDATE
      SET consecutive_failures = h.consecutive_failures + EXCLUDED.consecutive_failures,
          failing_since = COALESCE(h.failing_since, EXCLUDED.failing_since),
          last_failure_at = EXCLUDED.last_failure_at,
          last_error = EXCLUDED.last_error,
          updated_at = ${now}::timestamptz
      RETURNING h.org_id, h.integration_id, h.consecutive_failures, h.opened_count, h.paused_until, h.failing_since,
                h.last_error, h.opened_count > 0 AND h.xmax::text = '0' AS opened_now
    ),
    health AS (
      SELECT c.*, c.failing_since <= ${now}::timestamptz - ${breaker.disableAfterMs ?? null}::bigint * interval '1 millisecond' AS disable_due
      FROM (SELECT * FROM changed UNION ALL SELECT * FROM created) c
    )
    SELECT (SELECT COALESCE(json_agg(json_build_object('id', u.id, 'status', u.status)), '[]') FROM u) AS applied,
           (SELECT COALESCE(json_agg(json_build_object(
              'org_id', org_id, 'integration_id', integration_id, 'consecutive_failures', consecutive_failures,
              'opened_count', opened_count, 'paused_until', paused_until, 'opened_now', opened_now,
              'disable_due', COALESCE(disable_due, false), 'last_error', last_error)), '[]') FROM health) AS health,
           (SELECT COALESCE(json_agg(json_build_object('org_id', org_id, 'integration_id', integration_id)), '[]')
            FROM healed WHERE was_open) AS resumed
  `.execute(db);
  const row = rows[0]!;
  return {
    applied: row.applied,
    health: row.health.map((h) => ({ ...h, paused_until: h.paused_until === null ? null : new Date(h.paused_until) })),
    resumed: row.resumed,
  };
}
