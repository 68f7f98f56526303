// Prometheus metrics: process metrics plus request count and duration by
// operationId and status. Each area may register its own on `registry`.
import client from 'prom-client';
import { REFUSAL_REASONS, type RefusalReason } from './traffic-limits.ts';

export interface Metrics {
  registry: client.Registry;
  observeRequest(operation: string, status: number, seconds: number): void;
  /** a /jsv1 request refused by a limit or as too large or invalid (trackway_tracking_refused_total) */
  trackingRefused(reason: RefusalReason): void;
  /** what /metrics answers when it is not just `registry` (a cluster worker: the whole host's figures, cluster/cluster-metrics.ts) */
  scrape?: () => Promise<string>;
}

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'trackway_' });
  const requests = new client.Counter({
    name: 'trackway_http_requests_total',
    help: 'HTTP requests by operationId and status',
    labelNames: ['operation', 'status'] as const,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: 'trackway_http_request_duration_seconds',
    help: 'HTTP request duration by operationId',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const refused = new client.Counter({
    name: 'trackway_tracking_refused_total',
    help: 'tracking API (/jsv1) requests refused, by reason: ip_rate_limited, org_rate_limited, identify_rate_limited (429), too_large (413), invalid (400, 415)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of REFUSAL_REASONS) refused.inc({ reason }, 0);
  /**
   * The series of each operation, bound once: prom-client hashes a labels
   * object on every inc/observe (sorted keys joined into a string), which
   * showed in the workers' profile at a request's rate. Operations and
   * statuses are few (the contract's operationIds, `none`, the statuses
   * answered), so the map stays small.
   */
  interface Series {
    duration: client.Histogram.Internal<'operation'>;
    byStatus: Map<number, client.Counter.Internal>;
  }
  const series = new Map<string, Series>();
  return {
    registry,
    trackingRefused(reason) {
      refused.inc({ reason });
    },
    observeRequest(operation, status, seconds) {
      let s = series.get(operation);
      if (s === undefined) series.set(operation, (s = { duration: duration.labels({ operation }), byStatus: new Map() }));
      let counter = s.byStatus.get(status);
      if (counter === undefined) s.byStatus.set(status, (counter = requests.labels({ operation, status: String(status) })));
      counter.inc();
      s.duration.observe(seconds);
    },
  };
}
