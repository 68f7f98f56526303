// A histogram of the service's /metrics (the Prometheus text format), read
// between two moments: the observations made in between, and their
// quantiles to the resolution of the buckets. The rates scenario
// (scripts/bench-rates.ts) uses it to say how much of a request's latency
// was its batch's commit.

/** One histogram's cumulative buckets (upper bound in seconds → count), sum and count, every series added up. */
export interface HistogramReading {
  buckets: Map<number, number>;
  sum: number;
  count: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([^ ]+)/;
const LE = /(?:^|[{,])le="([^"]+)"/;

/** Reads histogram `name` from a /metrics text (all its label sets summed); an absent histogram reads as empty. */
export function readHistogram(text: string, name: string): HistogramReading {
  const r: HistogramReading = { buckets: new Map(), sum: 0, count: 0 };
  for (const line of text.split('\n')) {
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    if (m[1] === `${name}_bucket`) {
      const le = LE.exec(m[2] ?? '');
      if (!le) continue;
      const bound = le[1] === '+Inf' ? Infinity : Number(le[1]);
      r.buckets.set(bound, (r.buckets.get(bound) ?? 0) + value);
    } else if (m[1] === `${name}_sum`) r.sum += value;
    else if (m[1] === `${name}_count`) r.count += value;
  }
  return r;
}

/** What was observed between two readings of one histogram. */
export function histogramDelta(before: HistogramReading, after: HistogramReading): HistogramReading {
  const buckets = new Map<number, number>();
  for (const [le, n] of after.buckets) buckets.set(le, n - (before.buckets.get(le) ?? 0));
  return { buckets, sum: after.sum - before.sum, count: after.count - before.count };
}

/**
 * The upper bound of the bucket holding quantile q (0 < q ≤ 1): "at most
 * this". Infinity when it lies beyond the last finite bucket; null with no
 * observation.
 */
export function bucketQuantile(h: HistogramReading, q: number): number | null {
  if (h.count <= 0) return null;
  const rank = Math.ceil(q * h.count);
  for (const le of [...h.buckets.keys()].sort((a, b) => a - b)) if (h.buckets.get(le)! >= rank) return le;
  return Infinity;
}
