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

/**
 * A counter's series counted in a plain number at a request's rate and added
 * to prom-client's when the registry is read (the counter's collect hook).
 * prom-client (15.x) hashes a labels object on every `inc` — a child from
 * `labels()` too: it keeps the labels and calls its parent with them — which
 * showed in the workers' allocation profile at every request
 * (docs/profiles/whole-host.md).
 */
export interface LocalCounter<T extends string> {
  /** the series of these labels (made once, shown at 0 until counted) */
  series(labels: Partial<Record<T, string>>): { inc(): void };
}

export function localCounter<T extends string>(config: client.CounterConfiguration<T>): LocalCounter<T> {
  const all: { labels: Partial<Record<T, string>>; pending: number; inc(): void }[] = [];
  const counter = new client.Counter<T>({
    ...config,
    collect() {
      for (const s of all) {
        if (s.pending === 0) continue;
        this.inc(s.labels, s.pending);
        s.pending = 0;
      }
    },
  });
  return {
    series(labels) {
      counter.inc(labels, 0);
      const s = {
        labels,
        pending: 0,
        inc() {
          s.pending++;
        },
      };
      all.push(s);
      return s;
    },
  };
}

/**
 * A histogram's series kept here (bucket counts, sum, count) and read by the
 * registry as prom-client's own histogram would be (get(): the _bucket, _sum
 * and _count values), for the same reason as localCounter: an `observe`
 * through prom-client hashes its labels every time. Summed across workers
 * like any histogram (cluster/cluster-metrics.ts).
 */
class LocalHistogram<T extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly all: { labels: Partial<Record<T, string>>; counts: Float64Array; sum: number; count: number }[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly upperBounds: readonly number[],
  ) {}

  series(labels: Partial<Record<T, string>>): { observe(value: number): void } {
    const s = { labels, counts: new Float64Array(this.upperBounds.length), sum: 0, count: 0 };
    this.all.push(s);
    const bounds = this.upperBounds;
    return {
      observe(value) {
        for (let i = 0; i < bounds.length; i++) {
          if (value <= bounds[i]!) {
            s.counts[i]!++;
            break;
          }
        }
        s.sum += value;
        s.count++;
      },
    };
  }

  /** as prom-client's Histogram#get() gives it: each series' cumulative buckets (le first), +Inf, _sum and _count */
  get(): { name: string; help: string; type: 'histogram'; values: client.MetricValueWithName<string>[]; aggregator: 'sum' } {
    const values: client.MetricValueWithName<string>[] = [];
    for (const s of this.all) {
      let acc = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: this.upperBounds[i]!, ...s.labels }, value: acc });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }

  reset(): void {
    for (const s of this.all) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'trackway_' });
  const requests = localCounter({
    name: 'trackway_http_requests_total',
    help: 'HTTP requests by operationId and status',
    labelNames: ['operation', 'status'] as const,
    registers: [registry],
  });
  const duration = new LocalHistogram<'operation'>(
    'trackway_http_request_duration_seconds',
    'HTTP request duration by operationId',
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  );
  registry.registerMetric(duration as unknown as client.Metric);
  const refused = new client.Counter({
    name: 'trackway_tracking_refused_total',
    help: 'tracking API (/jsv1) requests refused, by reason: ip_rate_limited, org_rate_limited, identify_rate_limited (429), too_large (413), invalid (400, 415)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of REFUSAL_REASONS) refused.inc({ reason }, 0);
  /**
   * The series of each operation, made once. Operations and statuses are few
   * (the contract's operationIds, `none`, the statuses answered), so the map
   * stays small.
   */
  interface Series {
    duration: { observe(value: number): void };
    byStatus: Map<number, { inc(): void }>;
  }
  const series = new Map<string, Series>();
  return {
    registry,
    trackingRefused(reason) {
      refused.inc({ reason });
    },
    observeRequest(operation, status, seconds) {
      let s = series.get(operation);
      if (s === undefined) series.set(operation, (s = { duration: duration.series({ operation }), byStatus: new Map() }));
      let counter = s.byStatus.get(status);
      if (counter === undefined) s.byStatus.set(status, (counter = requests.series({ operation, status: String(status) })));
      counter.inc();
      s.duration.observe(seconds);
    },
  };
}
