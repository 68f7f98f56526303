// The circuit breaker of an endpoint (docs/design.md "Trust"): one per
// integration, its state in webhook_endpoint_health so that every dispatcher
// process shares it. Closed: deliveries go out. After `threshold` failed
// attempts in a row it opens: the integration's deliveries are not claimed
// (they wait with their attempt counts and retry steps untouched) until the
// cool-down ends; then one delivery is claimed as a probe (half-open). A
// successful attempt closes it; a failed probe opens it again for twice as
// long, up to `maxCooldownMs`. An endpoint that has failed every attempt for
// WEBHOOK_DISABLE_AFTER is disabled (auto-disable.service.ts).
//
// The SQL that applies outcomes to the state is in outcomes.repository.ts;
// this file holds the pure parts: the options, what a batch of outcomes says
// about each endpoint, and the API view of the state.
import type { Schemas } from '../http/types.ts';
import type { OrgId } from '../db/tenancy.ts';

export interface BreakerOptions {
  /** failed attempts in a row that pause an endpoint (default 5) */
  threshold: number;
  /**
   * the first pause, in ms (default 5 s); after the n-th opening since the
   * last success the pause is min(maxCooldownMs, cooldownMs × 2^(n-1))
   */
  cooldownMs: number;
  /** the longest pause, in ms (default 10 min) */
  maxCooldownMs: number;
}

export const DEFAULT_BREAKER: BreakerOptions = { threshold: 5, cooldownMs: 5_000, maxCooldownMs: 600_000 };

/** One attempt's outcome, as the breaker sees it. */
export interface AttemptOutcome {
  orgId: OrgId;
  integrationId: number;
  /** a 2xx */
  ok: boolean;
  attemptedAt: Date;
  durationMs: number;
  /** why it failed (ignored when ok) */
  error: string | null;
  /** the half-open probe of its endpoint */
  probe: boolean;
}

/** What one batch of outcomes says about one endpoint. */
export interface EndpointOutcome {
  orgId: OrgId;
  integrationId: number;
  /** at least one attempt succeeded: the breaker closes, failures before it no longer count */
  ok: boolean;
  /** failed attempts after the last success (all of them when none succeeded) */
  fails: number;
  firstFailAt: Date | null;
  lastFailAt: Date | null;
  lastError: string | null;
  /** a probe failed (and nothing succeeded after it) */
  probeFailed: boolean;
}

/**
 * Sums up a batch per endpoint, in the order the endpoint answered (the end
 * of each attempt). Interrupted attempts (a dispatcher stopping) are not
 * passed here: they say nothing about the endpoint.
 */
export function summarise(attempts: AttemptOutcome[]): EndpointOutcome[] {
  const byEndpoint = new Map<number, AttemptOutcome[]>();
  for (const a of attempts) {
    const list = byEndpoint.get(a.integrationId);
    if (list) list.push(a);
    else byEndpoint.set(a.integrationId, [a]);
  }
  const out: EndpointOutcome[] = [];
  for (const list of byEndpoint.values()) {
    const end = (a: AttemptOutcome) => a.attemptedAt.getTime() + a.durationMs;
    list.sort((a, b) => end(a) - end(b));
    let lastOk = -1;
    list.forEach((a, i) => {
      if (a.ok) lastOk = i;
    });
    const failed = list.slice(lastOk + 1);
    const last = failed[failed.length - 1];
    out.push({
      orgId: list[0]!.orgId,
      integrationId: list[0]!.integrationId,
      ok: lastOk >= 0,
      fails: failed.length,
      firstFailAt: failed[0]?.attemptedAt ?? null,
      lastFailAt: last?.attemptedAt ?? null,
      lastError: last ? (last.error ?? 'failed') : null,
      probeFailed: failed.some((a) => a.probe),
    });
  }
  return out;
}

/** A row of webhook_endpoint_health as the API needs it. */
export interface HealthRow {
  org_id: OrgId;
  integration_id: number;
  consecutive_failures: number;
  failing_since: Date | null;
  last_error: string | null;
  opened_count: number;
  paused_until: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

export type IntegrationHealth = Schemas['IntegrationHealth'];

export const HEALTHY: IntegrationHealth = {
  state: 'healthy',
  consecutive_failures: 0,
  failing_since: null,
  last_error: null,
  paused_until: null,
  disabled_at: null,
  disabled_reason: null,
};

/** The `health` of an integration; no row means healthy. */
export function healthView(row: HealthRow | undefined): IntegrationHealth {
  if (!row) return { ...HEALTHY };
  const iso = (d: Date | null) => (d === null ? null : d.toISOString());
  const state = row.disabled_at !== null ? 'disabled' : row.opened_count > 0 ? 'paused' : row.consecutive_failures > 0 ? 'failing' : 'healthy';
  return {
    state,
    consecutive_failures: row.consecutive_failures,
    failing_since: iso(row.failing_since),
    last_error: row.last_error,
    paused_until: state === 'paused' ? iso(row.paused_until) : null,
    disabled_at: iso(row.disabled_at),
    disabled_reason: row.disabled_reason,
  };
}
