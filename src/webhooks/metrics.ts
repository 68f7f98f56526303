// Prometheus metrics of webhook delivery, registered once per registry.
import client from 'prom-client';
import type { Database } from '../db/database.ts';
import { countPending } from './claims.repository.ts';

export interface WebhookMetrics {
  attempted: client.Counter<'kind'>;
  succeeded: client.Counter<'kind'>;
  /** deliveries that ended failed (dead letter or a non-retryable answer) */
  failed: client.Counter<'kind'>;
  retried: client.Counter<'kind'>;
  attemptDuration: client.Histogram<'result'>;
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
  };
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
