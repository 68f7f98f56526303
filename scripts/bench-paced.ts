// An open-loop load at a fixed rate, for the mixed scenario's rated phase
// (scripts/bench-mixed.ts). autocannon's own rate limit is no use there: each
// connection sends as fast as it can until it has made its quota for the
// second, then waits for the next second, so "50 %" is full load for half of
// each second and nothing for the other half.
//
// Here request i is due at start + i / rate, whatever happened to the ones
// before it (open loop: a slow answer does not slow the offered load down),
// sent over at most `connections` keep-alive sockets (node:http Agent). Its
// latency is counted from when it was due, so time spent waiting for a free
// socket or behind a late timer counts against the server, not hidden
// (no coordinated omission). `lag` says how late the sender itself was.
import http from 'node:http';
import { notPostgres, treeCpuUs } from './bench-proc.ts';
import { type RequestFactory, type RoundsConfig, monotonicUs } from './bench-rounds.ts';

export interface PacedShot {
  target_rps: number;
  /** answered requests per second, over the time from the first due time to the last answer */
  achieved_rps: number;
  sent: number;
  completed: number;
  non2xx: number;
  errors: number;
  seconds: number;
  /** from each request's due time to the end of its answer */
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** how late the sender issued requests behind their due time */
  lag_p99_ms: number;
}

export interface PacedRun extends PacedShot {
  /** tag → wall-clock ms (performance.timeOrigin + now()) at which its 2xx answer ended */
  acked: Map<string, number>;
}

/** the value at percentile p of an ascending list (nearest rank) */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const round1 = (n: number) => Number(n.toFixed(1));
export const wallClockMs = (): number => performance.timeOrigin + performance.now();

export async function paced(
  base: string,
  make: RequestFactory,
  opts: { rate: number; seconds: number; connections: number; drainMs?: number },
): Promise<PacedRun> {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections, maxFreeSockets: opts.connections, scheduling: 'lifo' });
  const total = Math.max(1, Math.round(opts.rate * opts.seconds));
  const latencies: number[] = [];
  const lags: number[] = [];
  const acked = new Map<string, number>();
  let sent = 0;
  let completed = 0;
  let non2xx = 0;
  let errors = 0;
  let lastEnd = 0;
  let outstanding = 0;
  let wake: (() => void) | undefined;
  const start = performance.now() + 5;

  const send = (due: number) => {
    const r = make();
    const body = r.body === undefined ? undefined : Buffer.from(r.body);
    const headers: Record<string, string> = { ...r.headers };
    if (body) headers['content-length'] = String(body.length);
    outstanding++;
    sent++;
    lags.push(performance.now() - due);
    const done = (ok: boolean, status: number) => {
      const now = performance.now();
      outstanding--;
      lastEnd = now;
      if (!ok) errors++;
      else {
        completed++;
        latencies.push(now - due);
        if (status < 200 || status >= 300) non2xx++;
        else if (r.tag !== undefined) acked.set(r.tag, performance.timeOrigin + now);
      }
      if (outstanding === 0) wake?.();
    };
    const req = http.request({ host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent }, (res) => {
      res.on('data', () => {});
      res.on('end', () => done(true, res.statusCode ?? 0));
      res.on('error', () => done(false, 0));
    });
    req.on('error', () => done(false, 0));
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
    req.end(body);
  };

  let i = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) * opts.rate) / 1000) + 1);
      for (; i < due; i++) send(start + (i * 1000) / opts.rate);
      if (i >= total) return resolve();
      // sleep until the next request is due (timers fire ≥ 1 ms late: the loop catches up in bursts of what is due)
      setTimeout(tick, Math.max(0, start + (i * 1000) / opts.rate - performance.now()));
    };
    setTimeout(tick, 5);
  });
  if (outstanding > 0) {
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, opts.drainMs ?? 30_000).unref();
    });
  }
  agent.destroy();
  latencies.sort((a, b) => a - b);
  lags.sort((a, b) => a - b);
  const seconds = Math.max(1e-3, (lastEnd - start) / 1000);
  return {
    target_rps: opts.rate,
    achieved_rps: Math.round(completed / seconds),
    sent,
    completed,
    non2xx,
    errors: errors + outstanding,
    seconds: Number(seconds.toFixed(2)),
    p50_ms: round1(percentile(latencies, 50)),
    p99_ms: round1(percentile(latencies, 99)),
    max_ms: round1(latencies.at(-1) ?? 0),
    lag_p99_ms: round1(percentile(lags, 99)),
    acked,
  };
}

/** A paced run with the CPU the server's own processes and PostgreSQL spent on it, µs per completed request. */
export interface MeasuredPacedRun extends PacedRun {
  node_cpu_us_per_req: number;
  pg_cpu_us_per_req: number | null;
}

/**
 * One paced run against `server`, with its CPU counted (/proc deltas, as
 * bench-rounds.ts `shoot` counts a closed-loop round). For the service, its
 * RSS is sampled over the run and the run's window recorded under `window`
 * (for scripts/profile-summary.ts --bench).
 */
export async function pacedMeasured(
  server: { name: string; base: string; pid: number },
  make: RequestFactory,
  opts: { rate: number; seconds: number; connections: number },
  cfg: RoundsConfig,
  window: { scenario: string; round: number },
): Promise<MeasuredPacedRun> {
  const service = server.name === 'service';
  const tree = service ? notPostgres : {};
  const node0 = treeCpuUs(server.pid, tree);
  const pg0 = cfg.postmasterPid !== undefined ? treeCpuUs(cfg.postmasterPid) : undefined;
  if (service) cfg.serviceRss.start();
  const start = monotonicUs();
  const run = await paced(server.base, make, opts);
  if (service) {
    cfg.serviceWindows.push({ ...window, start_us: start, end_us: monotonicUs() });
    cfg.serviceRss.stop();
  }
  const per = (us: number) => Math.round(us / Math.max(1, run.completed));
  return {
    ...run,
    node_cpu_us_per_req: per(treeCpuUs(server.pid, tree) - node0),
    pg_cpu_us_per_req: pg0 === undefined ? null : per(treeCpuUs(cfg.postmasterPid!) - pg0),
  };
}
