// Prometheus metrics of webhook delivery, registered once per registry.
// Fairness is shown without a label per organisation (which would explode
// the series): how long due deliveries wait to be claimed, how the capacity
// is divided (the fair share, the reserve in use), how many organisations
// have due work and how many hold their whole share, which integrations are
// at their share or slowed down, and how much the largest holder holds.
import client from 'prom-client';
import type { Database } from '../db/database.ts';
import { countPending } from './claims.repository.ts';
import { countPausedEndpoints } from './endpoint-health.repository.ts';
import type { ShareSnapshot } from './fair-share.rules.ts';

export interface WebhookMetrics {
  attempted: client.Counter<'kind'>;
  succeeded: client.Counter<'kind'>;
  /** deliveries that ended failed (dead letter or a non-retryable answer) */
  failed: client.Counter<'kind'>;
  retried: client.Counter<'kind'>;
  attemptDuration: client.Histogram<'result'>;
  /** from due (or lease expired) to claimed */
  dispatchLag: client.Histogram;
  /** deliveries per dispatch statement: a claim, an outcome write (one per organisation of a batch) */
  statementRows: client.Histogram<'statement'>;
  /** circuit breakers that opened (or opened again after a failed probe) */
  breakerOpened: client.Counter;
  /** endpoints disabled after failing for WEBHOOK_DISABLE_AFTER */
  endpointsDisabled: client.Counter;
  /** the running dispatcher's capacity use (set while one runs) */
  shareSource: (() => ShareSnapshot) | undefined;
}

/**
 * A metric's child for one label value, made once (no labels object per
 * attempt). prom-client still hashes the child's labels on every inc/observe;
 * at the dispatcher's rate (a few per delivery) that is left as it is, where
 * the request path counts in plain numbers (src/http/metrics.ts localCounter).
 */
export function boundByLabel<C>(child: (value: string) => C): (value: string) => C {
  const children = new Map<string, C>();
  return (value) => {
    let c = children.get(value);
    if (c === undefined) children.set(value, (c = child(value)));
    return c;
  };
}

const byRegistry = new WeakMap<client.Registry, WebhookMetrics>();

export function webhookMetrics(registry: client.Registry, db: Database): WebhookMetrics {
  const known = byRegistry.get(registry);
  if (known) return known;
  const registers = [registry];
  const m: WebhookMetrics = {
    attempted: new client.Counter({
      name: 'trackway_webhook_deliveries_attempted_total',
      help: 'Webhook delivery attempts made, by notification kind',
      labelNames: ['kind'] as const,
      registers,
    }),
    succeeded: new client.Counter({
      name: 'trackway_webhook_deliveries_succeeded_total',
      help: 'Webhook deliveries answered 2xx, by notification kind',
      labelNames: ['kind'] as const,
      registers,
    }),
    failed: new client.Counter({
      name: 'trackway_webhook_deliveries_failed_total',
      help: 'Webhook deliveries that ended failed (attempts exhausted or a non-retryable answer), by notification kind',
      labelNames: ['kind'] as const,
      registers,
    }),
    retried: new client.Counter({
      name: 'trackway_webhook_deliveries_retried_total',
      help: 'Webhook attempts that failed and were scheduled again, by notification kind',
      labelNames: ['kind'] as const,
      registers,
    }),
    attemptDuration: new client.Histogram({
      name: 'trackway_webhook_attempt_duration_seconds',
      help: 'Duration of webhook delivery attempts, by result (2xx, retry, failed)',
      labelNames: ['result'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    dispatchLag: new client.Histogram({
      name: 'trackway_webhook_dispatch_lag_seconds',
      help: 'Time from a delivery being due (or its lease expiring) to this process claiming it; one tenant holding capacity shows here as other tenants waiting',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    statementRows: new client.Histogram({
      name: 'trackway_webhook_statement_rows',
      help: 'Deliveries per dispatcher statement: claim (one organisation), outcome (one organisation: outcomes, attempt rows and breakers together)',
      labelNames: ['statement'] as const,
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    }),
    breakerOpened: new client.Counter({
      name: 'trackway_webhook_breaker_opened_total',
      help: 'Times an endpoint was paused by its circuit breaker (failures in a row, or a failed probe), seen by this process',
      registers,
    }),
    endpointsDisabled: new client.Counter({
      name: 'trackway_webhook_endpoints_disabled_total',
      help: 'Integrations this process disabled because their endpoint failed every attempt for WEBHOOK_DISABLE_AFTER',
      registers,
    }),
    shareSource: undefined,
  };
  new client.Gauge({
    name: 'trackway_webhook_endpoints_paused',
    help: 'Endpoints paused by their circuit breaker right now (all organisations)',
    registers,
    async collect() {
      try {
        this.set(await countPausedEndpoints(db));
      } catch {
        // the database is away: keep the last value
      }
    },
  });
  const share = (f: (s: ShareSnapshot) => number) =>
    function (this: client.Gauge) {
      const s = m.shareSource?.();
      this.set(s ? f(s) : 0);
    };
  new client.Gauge({
    name: 'trackway_webhook_held_deliveries',
    help: 'Deliveries this process holds, in flight or waiting to start',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const s = m.shareSource?.();
      this.set({ state: 'in_flight' }, s?.inFlight ?? 0);
      this.set({ state: 'waiting' }, s?.waiting ?? 0);
    },
  });
  new client.Gauge({
    name: 'trackway_webhook_reserve_held',
    help: 'Deliveries this process holds from its reserve (WEBHOOK_DISPATCH_RESERVE): first slots of organisations that held nothing while the shared pool was full',
    registers,
    collect: share((s) => s.reserveHeld),
  });
  new client.Gauge({
    name: 'trackway_webhook_organisations_holding',
    help: 'Organisations with deliveries held by this process',
    registers,
    collect: share((s) => s.organisations),
  });
  new client.Gauge({
    name: 'trackway_webhook_organisations_due',
    help: 'Organisations with due work in this process (holding deliveries, or known to have more due): the pool is divided between them',
    registers,
    collect: share((s) => s.organisationsDue),
  });
  new client.Gauge({
    name: 'trackway_webhook_fair_share',
    help: 'Deliveries an organisation that wants more than an equal part may hold now in this process (the max-min fair share of the pool)',
    registers,
    collect: share((s) => s.fairShare),
  });
  new client.Gauge({
    name: 'trackway_webhook_organisations_at_share',
    help: 'Organisations holding at least their fair share in this process while more of theirs is due (they get more as their deliveries finish)',
    registers,
    collect: share((s) => s.organisationsFull),
  });
  new client.Gauge({
    name: 'trackway_webhook_integrations_at_share',
    help: 'Integrations holding their whole share in this process (slow or dead endpoints sit here)',
    registers,
    collect: share((s) => s.integrationsFull),
  });
  new client.Gauge({
    name: 'trackway_webhook_slow_integrations',
    help: 'Integrations with deliveries held whose lane is smaller than WEBHOOK_CONCURRENCY because their endpoint answers slower than WEBHOOK_SLOW_ENDPOINT',
    registers,
    collect: share((s) => s.integrationsSlow),
  });
  new client.Gauge({
    name: 'trackway_webhook_largest_organisation_held',
    help: 'Deliveries held by the organisation holding the most in this process (compare with trackway_webhook_fair_share)',
    registers,
    collect: share((s) => s.largestOrganisation),
  });
  new client.Gauge({
    name: 'trackway_webhook_pending_deliveries',
    help: 'Webhook deliveries waiting for their first or next attempt (the backlog)',
    registers,
    async collect() {
      try {
        this.set(await countPending(db));
      } catch {
        // the database is away: keep the last value rather than fail the scrape
      }
    },
  });
  byRegistry.set(registry, m);
  return m;
}
