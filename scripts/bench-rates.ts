// The rates scenario of `npm run bench`: page views with a new visitor each
// (the view scenario's requests) sent OPEN LOOP at fixed rates
// (scripts/bench-paced.ts), to the durable limit and to the service in turn at
// each rate, rounds alternating. It says what latency a shop's visitors see at
// a given load. A closed loop of 64 connections cannot: its mean latency is 64
// divided by its own rate (Little's law), so its p99 follows the machine's
// speed (BENCHMARKS.md, eleventh stop: "p99 at 64 connections is the rate in
// disguise").
//
// The rates are shares of the durable limit's closed-loop rate on the same
// requests in this run: the view scenario's median when it ran, else a shot
// measured here. A slow and a fast machine are so loaded alike for what each
// can do, and both servers get the same offered rate, so the limit's p99 at
// that rate is the reference for the service's. Latency counts from when a
// request was due (no coordinated omission); the sender's own lag is reported
// beside it.
import { bucketQuantile, histogramDelta, readHistogram } from './bench-histogram.ts';
import { type PacedShot, paced, pacedMeasured } from './bench-paced.ts';
import { type RoundsConfig, type Scenario, median, shoot } from './bench-rounds.ts';
import type { Server } from './bench-servers.ts';

/** One server at one rate in one round: the paced shot and the CPU its processes and PostgreSQL spent on it. */
export interface RatedShot extends PacedShot {
  node_cpu_us_per_req: number;
  pg_cpu_us_per_req: number | null;
  /** the service only: its ingest batches over the shot, from its /metrics (trackway_ingest_batch_size, trackway_ingest_commit_seconds) */
  batches?: BatchFacts;
}

/** The service's ingest batches during a shot: how many items each carried, and how long each took to write and commit. */
export interface BatchFacts {
  count: number;
  items_per_batch: number;
  commit_mean_ms: number;
  /** the upper bound of the histogram bucket holding the median (and the 99th percentile) commit: "at most"; null beyond the last bucket (1 s) or with no batch */
  commit_p50_at_most_ms: number | null;
  commit_p99_at_most_ms: number | null;
}

const BATCH_SIZE = 'trackway_ingest_batch_size';
const COMMIT_SECONDS = 'trackway_ingest_commit_seconds';

async function metricsText(server: Server): Promise<string> {
  return (await fetch(`${server.base}/metrics`)).text();
}

function batchFacts(before: string, after: string): BatchFacts {
  const size = histogramDelta(readHistogram(before, BATCH_SIZE), readHistogram(after, BATCH_SIZE));
  const commit = histogramDelta(readHistogram(before, COMMIT_SECONDS), readHistogram(after, COMMIT_SECONDS));
  // null: beyond the last finite bucket (1 s), or nothing observed (count 0)
  const ms = (s: number | null) => (s === null || s === Infinity ? null : Number((s * 1000).toFixed(1)));
  return {
    count: commit.count,
    items_per_batch: size.count > 0 ? Number((size.sum / size.count).toFixed(1)) : 0,
    commit_mean_ms: commit.count > 0 ? Number(((commit.sum / commit.count) * 1000).toFixed(2)) : 0,
    commit_p50_at_most_ms: ms(bucketQuantile(commit, 0.5)),
    commit_p99_at_most_ms: ms(bucketQuantile(commit, 0.99)),
  };
}

export interface RateResult {
  /** the share of the limit's closed-loop rate */
  share: number;
  target_rps: number;
  /** medians over the rounds */
  limit: RateSummary;
  service: RateSummary;
  rounds: { limit: RatedShot; service: RatedShot }[];
}

export interface RateSummary {
  /** the service only: medians of its shots' batch facts */
  batches?: BatchFacts;
  achieved_rps: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  lag_p99_ms: number;
  node_cpu_us_per_req: number;
  pg_cpu_us_per_req: number | null;
  non2xx: number;
  errors: number;
}

export interface RatesResult {
  scenario: string;
  /** the limit's closed-loop req/s the shares are of, and where it came from */
  limit_closed_loop_rps: number;
  limit_closed_loop_source: string;
  connections: number;
  rates: RateResult[];
}

export interface RatesInput {
  servers: { limit: Server; service: Server };
  scenario: Scenario;
  /** shares of the limit's closed-loop rate, ascending (0 < s ≤ 1) */
  shares: number[];
  /** the limit's closed-loop median req/s on the same requests, when the run measured it already */
  limitRps?: number;
  cfg: RoundsConfig;
}

async function rated(
  server: Server,
  scenario: Scenario,
  rate: number,
  cfg: RoundsConfig,
  window: { scenario: string; round: number },
): Promise<RatedShot> {
  const metrics0 = server.name === 'service' ? await metricsText(server) : undefined;
  const { acked: _acked, ...shot } = await pacedMeasured(
    server,
    scenario.make,
    { rate, seconds: cfg.duration, connections: cfg.connections },
    cfg,
    window,
  );
  return { ...shot, ...(metrics0 !== undefined ? { batches: batchFacts(metrics0, await metricsText(server)) } : {}) };
}

function summarise(shots: RatedShot[]): RateSummary {
  const m = (f: (s: RatedShot) => number) => median(shots.map(f));
  const pg = shots.every((s) => s.pg_cpu_us_per_req !== null);
  const b = shots.every((s) => s.batches) ? shots.map((s) => s.batches!) : undefined;
  // a bucket bound ("at most") of Infinity or null sorts last / is left out
  const bound = (f: (x: BatchFacts) => number | null) => {
    const xs = b!.map(f).filter((x): x is number => x !== null);
    return xs.length ? median(xs) : null;
  };
  return {
    ...(b
      ? {
          batches: {
            count: Math.round(median(b.map((x) => x.count))),
            items_per_batch: median(b.map((x) => x.items_per_batch)),
            commit_mean_ms: median(b.map((x) => x.commit_mean_ms)),
            commit_p50_at_most_ms: bound((x) => x.commit_p50_at_most_ms),
            commit_p99_at_most_ms: bound((x) => x.commit_p99_at_most_ms),
          },
        }
      : {}),
    achieved_rps: Math.round(m((s) => s.achieved_rps)),
    p50_ms: m((s) => s.p50_ms),
    p99_ms: m((s) => s.p99_ms),
    max_ms: m((s) => s.max_ms),
    lag_p99_ms: m((s) => s.lag_p99_ms),
    node_cpu_us_per_req: Math.round(m((s) => s.node_cpu_us_per_req)),
    pg_cpu_us_per_req: pg ? Math.round(m((s) => s.pg_cpu_us_per_req!)) : null,
    non2xx: shots.reduce((n, s) => n + s.non2xx, 0),
    errors: shots.reduce((n, s) => n + s.errors, 0),
  };
}

const line = (name: string, s: RatedShot) =>
  `${name} ${s.achieved_rps} req/s, p50 ${s.p50_ms} / p99 ${s.p99_ms} / max ${s.max_ms} ms (sender lag p99 ${s.lag_p99_ms} ms), ` +
  `Node ${s.node_cpu_us_per_req}${s.pg_cpu_us_per_req === null ? '' : ` / PG ${s.pg_cpu_us_per_req}`} µs/req` +
  (s.batches
    ? `; ${s.batches.count} batches of ${s.batches.items_per_batch} items, commit mean ${s.batches.commit_mean_ms} ms, ` +
      `p50 ≤ ${s.batches.commit_p50_at_most_ms} / p99 ≤ ${s.batches.commit_p99_at_most_ms} ms`
    : '') +
  (s.non2xx || s.errors ? `, non-2xx ${s.non2xx}, errors ${s.errors}` : '');

export async function benchRates(input: RatesInput): Promise<RatesResult> {
  const { servers, scenario, cfg } = input;
  const { log } = cfg;
  log(
    `\n== rates: ${scenario.title}, open loop at ${input.shares.map((s) => `${Math.round(s * 100)} %`).join(', ')} of the limit's closed-loop rate`,
  );
  let limitRps = input.limitRps;
  let source = `the ${scenario.key} scenario's limit median in this run`;
  if (limitRps === undefined) {
    // not measured in this run: one closed-loop shot of the limit (after a warm-up) gives it
    await shoot(servers.limit, scenario.make, cfg.warmup.references, cfg);
    limitRps = (await shoot(servers.limit, scenario.make, cfg.duration, cfg)).rps;
    source = `one closed-loop shot of the limit at ${cfg.connections} connections, measured here`;
  }
  log(`   the limit's closed-loop rate: ${Math.round(limitRps)} req/s (${source})`);
  const targets = input.shares.map((share) => ({ share, rate: Math.max(1, Math.round(limitRps * share)) }));
  // warm-up: both servers at the lowest rate for a moment (connections open, code optimised)
  const low = targets[0]!.rate;
  for (const server of [servers.limit, servers.service]) {
    await paced(server.base, scenario.make, { rate: low, seconds: cfg.warmup.references, connections: cfg.connections });
  }
  const rounds = targets.map(() => [] as { limit: RatedShot; service: RatedShot }[]);
  for (let i = 1; i <= cfg.rounds; i++) {
    for (const [k, t] of targets.entries()) {
      const window = { scenario: `rates-${Math.round(t.share * 100)}`, round: i };
      const limit = await rated(servers.limit, scenario, t.rate, cfg, window);
      const service = await rated(servers.service, scenario, t.rate, cfg, window);
      rounds[k]!.push({ limit, service });
      log(`   round ${i} at ${t.rate} req/s (${Math.round(t.share * 100)} %): ${line('limit', limit)}\n            ${line('service', service)}`);
    }
  }
  return {
    scenario: scenario.key,
    limit_closed_loop_rps: Math.round(limitRps),
    limit_closed_loop_source: source,
    connections: cfg.connections,
    rates: targets.map((t, k) => ({
      share: t.share,
      target_rps: t.rate,
      limit: summarise(rounds[k]!.map((r) => r.limit)),
      service: summarise(rounds[k]!.map((r) => r.service)),
      rounds: rounds[k]!,
    })),
  };
}
