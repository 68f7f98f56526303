// The dispatcher's SQL: claim due deliveries under a lease, fairly between
// organisations and integrations and past paused endpoints, and give back
// claims it will not send. Each is one statement for a whole batch. The claim
// is the fencing token: an outcome (outcomes.repository.ts) is applied only
// while `attempts_count` still equals the number the claim gave, so a process
// whose lease expired (and whose delivery was claimed again elsewhere) cannot
// overwrite the newer attempt.
import { sql } from 'kysely';
import { ALL_ORGANISATIONS, type Database, PREPARE } from '../db/database.ts';
import type { OrgId } from '../db/tenancy.ts';

export interface ClaimedDelivery {
  org_id: OrgId;
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
  /** the half-open probe of its endpoint's circuit breaker */
  probe: boolean;
  /** when it became due (or, claimed again, when the lease it had expired) */
  due_at: Date;
}

export interface ClaimOptions {
  /** most deliveries claimed for the organisation (its room; probes may add one per paused endpoint whose cool-down ended) */
  limit: number;
  leaseMarginMs: number;
  /** its integrations this process holds deliveries of: how many more each may take (0 = none) */
  integrationRooms: { id: number; room: number }[];
  /** how many an integration not listed may take */
  defaultIntegrationRoom: number;
}

/** Organisations whose id modulo `count` is `index`: a share of the tenants for one of several dispatchers. */
export interface DispatchSlot {
  index: number;
  count: number;
}

export interface Claim {
  rows: ClaimedDelivery[];
  /** integrations that had more due than this claim took from them (cut by a share or the limit) */
  cut: { orgId: OrgId; integrationId: number }[];
}

export const LOST_ATTEMPT_ERROR = 'no outcome recorded: the dispatcher that made this attempt stopped before finishing it (its lease expired)';
export const INACTIVE_ERROR = 'integration deactivated or deleted';

/**
 * The cut-off for "due" at `now`: one millisecond past it. JavaScript's clock
 * counts milliseconds and PostgreSQL's now() microseconds, so a delivery
 * committed in the same millisecond as the claim that a NOTIFY of it started
 * (next_attempt_at 20:10:37.724512, now 20:10:37.724) was not due yet, and
 * waited for the next poll: a healthy organisation's contact match arrived
 * after 1.0–1.8 s instead of a few ms, about once in 2,000 (test/webhooks/fair-shares.test.ts).
 */
function dueCutoff(now: Date): Date {
  return new Date(now.getTime() + 1);
}

/** How many organisations one scan for due work returns at most. */
export const SCAN_ORGANISATIONS = 1000;

/**
 * Organisations with due deliveries, oldest due first (at most `limit`),
 * past those listed in `excluded` (no room here) and endpoints paused by
 * their circuit breaker, of this dispatcher's slot when it has one
 * (organisation id modulo the slot count). The one statement of the
 * dispatcher that spans organisations; its cost grows with the due backlog,
 * so the dispatcher runs it at most every poll interval and when told that
 * something became due without saying for whom: a NOTIFY of new deliveries
 * names their organisations, which are claimed directly (claimForOrganisation).
 */
export async function dueOrganisations(db: Database, now: Date, limit: number, excluded: OrgId[], slot: DispatchSlot | undefined): Promise<OrgId[]> {
  const dueBy = dueCutoff(now);
  const { rows } = await sql<{ org_id: OrgId }>`${sql.raw(PREPARE)}${sql.raw(ALL_ORGANISATIONS)}
    SELECT d.org_id FROM deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= ${dueBy}::timestamptz
      AND (d.lease_until IS NULL OR d.lease_until <= ${dueBy}::timestamptz)
      AND d.org_id % ${slot?.count ?? 1}::bigint = ${slot?.index ?? 0}::bigint
      AND d.org_id <> ALL (${excluded}::bigint[])
      AND NOT EXISTS (
        SELECT 1 FROM webhook_endpoint_health h
        WHERE h.org_id = d.org_id AND h.integration_id = d.integration_id
          AND h.opened_count > 0 AND h.paused_until > ${dueBy}::timestamptz
      )
    GROUP BY d.org_id
    ORDER BY min(d.next_attempt_at)
    LIMIT ${limit}::int
  `.execute(db);
  return rows.map((r) => r.org_id);
}

/**
 * Claims the organisation's due deliveries: at most `limit`, at most each
 * integration's room, shared round-robin between its integrations, oldest
 * first within each. Paused endpoints (circuit breaker open) are skipped;
 * one whose cool-down ended gets one delivery as its probe (the breaker row
 * is moved on in the same statement, so only one process probes). Each
 * claimed delivery gets a lease of its integration's httpTimeout plus the
 * margin (in `lease_until`, which no index holds, so the claim is a HOT
 * update: src/db/migrations/2026-12-01T0200_deliveries_lease.ts) and its
 * attempt number. A pending delivery is due once its next_attempt_at has
 * passed and it holds no lease still running. Due deliveries of an inactive or deleted
 * integration are cancelled instead. An attempt left without an outcome by
 * a process that died is recorded as such. One statement within one
 * organisation (one shard under Citus), whatever the other tenants' backlogs.
 *
 * How: a loose index scan of deliveries_pending_org finds every integration
 * of the organisation with pending deliveries (one index descent each,
 * whatever the backlogs), a second descent each its oldest due one past
 * those in flight (at most its requests in flight, read and skipped), then
 * each due integration's oldest deliveries are locked (SKIP LOCKED) up to its
 * room, and cut to the limit.
 */
export async function claimForOrganisation(db: Database, org: OrgId, now: Date, opts: ClaimOptions): Promise<Claim> {
  const margin = opts.leaseMarginMs;
  const ri = opts.integrationRooms;
  const dueBy = dueCutoff(now);
  const { rows } = await sql<ClaimedDelivery & { cut: [OrgId, number][] | null }>`${sql.raw(PREPARE)}
    WITH RECURSIVE
    queues AS (
      (SELECT d.org_id, d.integration_id, d.next_attempt_at FROM deliveries d
       WHERE d.org_id = ${org}::bigint AND d.status = 'pending' ORDER BY d.integration_id, d.next_attempt_at LIMIT 1)
      UNION ALL
      SELECT n.org_id, n.integration_id, n.next_attempt_at FROM queues q CROSS JOIN LATERAL (
        SELECT d.org_id, d.integration_id, d.next_attempt_at FROM deliveries d
        WHERE d.org_id = ${org}::bigint AND d.status = 'pending' AND d.integration_id > q.integration_id
        ORDER BY d.integration_id, d.next_attempt_at LIMIT 1
      ) n
    ),
    rooms_i AS (SELECT * FROM unnest(${ri.map((r) => r.id)}::bigint[], ${ri.map((r) => r.room)}::int[]) AS r(integration_id, room)),
    due AS (
      SELECT q.org_id, q.integration_id, f.next_attempt_at AS head,
             COALESCE(i.active AND i.deleted_at IS NULL, false) AS live,
             -- the lease end, computed here: Citus refuses timestamptz arithmetic on columns in UPDATE SET
             ${now}::timestamptz + (i.http_timeout * 1000 + ${margin}::int) * interval '1 millisecond' AS lease_until,
             COALESCE(h.opened_count, 0) > 0 AS paused,
             ${opts.limit}::int AS org_room,
             least(COALESCE(ri.room, ${opts.defaultIntegrationRoom}::int), ${opts.limit}::int) AS room
      FROM queues q
      -- the integration's oldest delivery that is due and holds no running lease (its queue's head may be in flight)
      CROSS JOIN LATERAL (
        SELECT e.next_attempt_at FROM deliveries e
        WHERE e.org_id = ${org}::bigint AND e.integration_id = q.integration_id AND e.status = 'pending'
          AND e.next_attempt_at <= ${dueBy}::timestamptz AND (e.lease_until IS NULL OR e.lease_until <= ${dueBy}::timestamptz)
        ORDER BY e.next_attempt_at LIMIT 1
      ) f
      LEFT JOIN integrations i ON i.org_id = ${org}::bigint AND i.id = q.integration_id
      LEFT JOIN webhook_endpoint_health h ON h.org_id = ${org}::bigint AND h.integration_id = q.integration_id
      LEFT JOIN rooms_i ri ON ri.integration_id = q.integration_id
    ),
    open_queues AS (
      SELECT d.*, count(*) OVER () AS n
      FROM (SELECT * FROM due WHERE live AND NOT paused AND room > 0 ORDER BY head LIMIT ${opts.limit}::int) d
    ),
    picked AS (
      SELECT x.org_id, x.id, x.next_attempt_at, x.due_at, q.integration_id, q.org_room, q.room, q.take, q.lease_until,
             row_number() OVER (PARTITION BY q.integration_id ORDER BY x.next_attempt_at, x.id) AS rn_i
      FROM (SELECT o.*, least(o.room, ceil(${opts.limit}::numeric / o.n)::int) AS take FROM open_queues o) q
      CROSS JOIN LATERAL (
        SELECT e.org_id, e.id, e.next_attempt_at, GREATEST(e.next_attempt_at, e.lease_until) AS due_at FROM deliveries e
        WHERE e.org_id = ${org}::bigint AND e.integration_id = q.integration_id AND e.status = 'pending' AND e.next_attempt_at <= ${dueBy}::timestamptz
          AND (e.lease_until IS NULL OR e.lease_until <= ${dueBy}::timestamptz)
        ORDER BY e.next_attempt_at LIMIT q.take
        FOR UPDATE SKIP LOCKED
      ) x
    ),
    chosen AS (
      SELECT r.org_id, r.id, r.due_at AS lease_was, false AS probe, r.lease_until
      FROM (SELECT p.*, row_number() OVER (PARTITION BY p.org_id ORDER BY p.rn_i, p.next_attempt_at, p.id) AS rn_o FROM picked p) r
      WHERE r.rn_o <= r.org_room
      ORDER BY r.rn_o, r.next_attempt_at
      LIMIT ${opts.limit}::int
    ),
    tickets AS (
      UPDATE webhook_endpoint_health h
      SET paused_until = d.lease_until, updated_at = ${now}::timestamptz
      FROM due d, integrations i
      WHERE d.live AND d.paused AND d.room > 0
        AND h.org_id = ${org}::bigint AND h.integration_id = d.integration_id
        AND h.opened_count > 0 AND h.disabled_at IS NULL AND h.paused_until <= ${dueBy}::timestamptz
        AND i.org_id = ${org}::bigint AND i.id = d.integration_id
      RETURNING h.org_id, h.integration_id, d.lease_until
    ),
    probes AS (
      SELECT x.org_id, x.id, x.due_at AS lease_was, true AS probe, t.lease_until
      FROM tickets t CROSS JOIN LATERAL (
        SELECT e.org_id, e.id, GREATEST(e.next_attempt_at, e.lease_until) AS due_at FROM deliveries e
        WHERE e.org_id = ${org}::bigint AND e.integration_id = t.integration_id AND e.status = 'pending' AND e.next_attempt_at <= ${dueBy}::timestamptz
          AND (e.lease_until IS NULL OR e.lease_until <= ${dueBy}::timestamptz)
        ORDER BY e.next_attempt_at LIMIT 1
        FOR UPDATE SKIP LOCKED
      ) x
    ),
    dead AS (
      SELECT x.org_id, x.id
      FROM due d CROSS JOIN LATERAL (
        SELECT e.org_id, e.id FROM deliveries e
        WHERE e.org_id = ${org}::bigint AND e.integration_id = d.integration_id AND e.status = 'pending' AND e.next_attempt_at <= ${dueBy}::timestamptz
          AND (e.lease_until IS NULL OR e.lease_until <= ${dueBy}::timestamptz)
        LIMIT ${opts.limit}::int
        FOR UPDATE SKIP LOCKED
      ) x
      WHERE NOT d.live
      LIMIT ${opts.limit}::int
    ),
    cancelled AS (
      UPDATE deliveries d
      SET status = 'cancelled', next_attempt_at = NULL, lease_until = NULL, last_error = ${INACTIVE_ERROR}
      FROM dead
      WHERE d.org_id = ${org}::bigint AND d.id = dead.id
      RETURNING d.id
    ),
    taken AS (
      SELECT * FROM chosen UNION ALL SELECT * FROM probes
    ),
    claimed AS (
      UPDATE deliveries d
      SET attempts_count = d.attempts_count + 1,
          lease_until = t.lease_until
      FROM taken t, integrations i
      WHERE d.org_id = ${org}::bigint AND d.id = t.id
        AND i.org_id = ${org}::bigint AND i.id = d.integration_id
      RETURNING d.org_id, d.id, d.integration_id, d.kind, d.webhook_id, d.body, d.attempts_count,
                d.schedule_start, t.lease_was, t.probe, i.endpoint, i.auth_token_enc, i.signing_secret_enc,
                i.http_timeout, i.modified_at
    )
    SELECT org_id, id, integration_id, kind, webhook_id, body, attempts_count, schedule_start,
           endpoint, auth_token_enc, signing_secret_enc, http_timeout, modified_at, probe,
           lease_was AS due_at, NULL::json AS cut
    FROM claimed
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           (SELECT COALESCE(json_agg(DISTINCT jsonb_build_array(p.org_id, p.integration_id)), '[]')
            FROM picked p
            WHERE p.rn_i = p.take OR NOT EXISTS (SELECT 1 FROM chosen c WHERE c.org_id = p.org_id AND c.id = p.id))
  `.execute(db);
  // the last row only lists the integrations that had more
  const claimed = rows.filter((r) => r.id !== null);
  await recordLostAttempts(db, org, claimed, margin);
  const cut = rows.find((r) => r.id === null)?.cut ?? [];
  return { rows: claimed, cut: cut.map(([orgId, integrationId]) => ({ orgId, integrationId })) };
}

/**
 * An attempt left without an outcome by a process that died (its lease
 * expired and the delivery was claimed again) is recorded as such. A
 * statement of its own: Citus routes no INSERT … SELECT from a CTE, and the
 * rows all belong to one organisation (ON CONFLICT: recorded already).
 */
async function recordLostAttempts(db: Database, org: OrgId, claimed: ClaimedDelivery[], margin: number): Promise<void> {
  const lost = claimed.filter((c) => c.attempts_count > 1);
  if (lost.length === 0) return;
  await db
    .insertInto('delivery_attempts')
    .values(
      lost.map((c) => ({
        org_id: org,
        delivery_id: c.id,
        n: c.attempts_count - 1,
        attempted_at: new Date(c.due_at.getTime() - (c.http_timeout * 1000 + margin)),
        status_code: null,
        duration_ms: 0,
        error: LOST_ATTEMPT_ERROR,
        response_excerpt: null,
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/**
 * Gives claims back unsent (due at once: their next_attempt_at had passed when
 * claimed; attempt number restored, lease cleared: a HOT update), e.g. for a
 * saturated endpoint.
 */
export async function releaseClaims(db: Database, claims: { orgId: OrgId; id: number; n: number }[]): Promise<void> {
  if (claims.length === 0) return;
  await sql`
    UPDATE deliveries d
    SET attempts_count = d.attempts_count - 1, lease_until = NULL
    FROM unnest(${claims.map((c) => c.orgId)}::bigint[], ${claims.map((c) => c.id)}::bigint[],
                ${claims.map((c) => c.n)}::int[]) AS r(org_id, id, n)
    WHERE d.org_id = r.org_id AND d.id = r.id AND d.attempts_count = r.n AND d.status = 'pending'
  `.execute(db);
}

/** Deliveries waiting for their first or next attempt (the backlog). */
export async function countPending(db: Database): Promise<number> {
  const row = await db
    .selectFrom('deliveries')
    .modifyFront(sql.raw(ALL_ORGANISATIONS))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
