// One scenario of `npm run bench`: a warm-up of each server, then rounds
// alternating bare → limit → service, each driven by autocannon for the same
// time at the same number of connections, with the CPU of the server's Node
// processes and of PostgreSQL counted over the round (/proc deltas).
import autocannon from 'autocannon';
import { type RssPeak, notPostgres, treeCpuUs } from './bench-proc.ts';
import type { Server } from './bench-servers.ts';

export type RequestFactory = () => {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** a name for this request that a paced run reports back with its answer's time (autocannon ignores it) */
  tag?: string;
};

export interface Scenario {
  key: string;
  title: string;
  make: RequestFactory;
  /** the durable limit takes part (false for reads: it only writes) */
  limit: boolean;
  /** runs once before the warm-up (e.g. creates the visitors that come back) */
  prepare?: (service: Server) => Promise<void>;
}

export interface Shot {
  rps: number;
  completed: number;
  seconds: number;
  p50_ms: number;
  p99_ms: number;
  non2xx: number;
  errors: number;
  /** CPU of the server's own processes (Node), µs per completed request */
  node_cpu_us_per_req: number;
  /** CPU of PostgreSQL over the same round, µs per completed request; null when not visible */
  pg_cpu_us_per_req: number | null;
  /** share of one core, over the round */
  node_cores: number;
  pg_cores: number | null;
}

export interface RoundsConfig {
  connections: number;
  duration: number;
  rounds: number;
  warmup: { references: number; service: number };
  postmasterPid: number | undefined;
  log(line: string): void;
  /** sampled during the service's rounds */
  serviceRss: RssPeak;
  /** when each measured service round ran (CLOCK_MONOTONIC µs, the clock of V8's CPU profiles) */
  serviceWindows: ServiceWindow[];
}

export interface ServiceWindow {
  scenario: string;
  round: number;
  start_us: number;
  end_us: number;
}

/** CLOCK_MONOTONIC in µs: the clock V8 stamps CPU profile samples with, the same in every process */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export async function shoot(server: Server, make: RequestFactory, seconds: number, cfg: RoundsConfig, opts: { amount?: number } = {}): Promise<Shot> {
  const tree = server.name === 'service' ? notPostgres : {};
  const pg0 = cfg.postmasterPid !== undefined ? treeCpuUs(cfg.postmasterPid) : undefined;
  const node0 = treeCpuUs(server.pid, tree);
  const t0 = performance.now();
  if (server.name === 'service') cfg.serviceRss.start();
  const result = await autocannon({
    url: server.base,
    connections: cfg.connections,
    ...(opts.amount ? { amount: opts.amount } : { duration: seconds }),
    requests: [
      {
        setupRequest: (req) => {
          const r = make();
          return { ...req, method: r.method, path: r.path, body: r.body, headers: { ...req.headers, ...r.headers } };
        },
      },
    ],
  });
  if (server.name === 'service') cfg.serviceRss.stop();
  const elapsed = (performance.now() - t0) / 1000;
  const nodeUs = treeCpuUs(server.pid, tree) - node0;
  const pgUs = pg0 !== undefined ? treeCpuUs(cfg.postmasterPid!) - pg0 : undefined;
  const completed = result.requests.total;
  const per = (us: number) => (completed > 0 ? Math.round(us / completed) : 0);
  return {
    rps: result.requests.average,
    completed,
    seconds: Number(elapsed.toFixed(2)),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    node_cpu_us_per_req: per(nodeUs),
    pg_cpu_us_per_req: pgUs === undefined ? null : per(pgUs),
    node_cores: Number((nodeUs / 1e6 / elapsed).toFixed(2)),
    pg_cores: pgUs === undefined ? null : Number((pgUs / 1e6 / elapsed).toFixed(2)),
  };
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export interface ServerSummary {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  node_cpu_us_per_req: number;
  pg_cpu_us_per_req: number | null;
  node_cores: number;
  pg_cores: number | null;
  non2xx: number;
  errors: number;
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  /** each server's medians over the rounds */
  bare: ServerSummary;
  limit: ServerSummary | null;
  service: ServerSummary;
  /** median(service req/s) / median(reference req/s); per_round has each round's own ratios */
  service_to_limit: number | null;
  service_to_bare: number;
  limit_to_bare: number | null;
  per_round: {
    service_to_limit: number | null;
    service_to_bare: number;
    bare: Shot;
    limit: Shot | null;
    service: Shot;
  }[];
  stored_events?: string;
  /** `--stored`: service req/s on the stored database / on the empty one (medians, and per round) */
  stored_to_empty?: number;
  stored_to_empty_per_round?: number[];
}

export function summarise(shots: Shot[]): ServerSummary {
  const m = (f: (s: Shot) => number) => median(shots.map(f));
  const pg = shots.every((s) => s.pg_cpu_us_per_req !== null);
  return {
    rps: Math.round(m((s) => s.rps)),
    p50_ms: m((s) => s.p50_ms),
    p99_ms: m((s) => s.p99_ms),
    node_cpu_us_per_req: Math.round(m((s) => s.node_cpu_us_per_req)),
    pg_cpu_us_per_req: pg ? Math.round(m((s) => s.pg_cpu_us_per_req!)) : null,
    node_cores: m((s) => s.node_cores),
    pg_cores: pg ? m((s) => s.pg_cores!) : null,
    non2xx: shots.reduce((n, s) => n + s.non2xx, 0),
    errors: shots.reduce((n, s) => n + s.errors, 0),
  };
}

export const ratio = (a: number, b: number) => (b > 0 ? Number((a / b).toFixed(3)) : 0);

export function roundLine(name: string, s: Shot): string {
  const pg = s.pg_cpu_us_per_req === null ? '' : `, PG ${s.pg_cpu_us_per_req} µs/req`;
  const bad = s.non2xx || s.errors ? `, non-2xx ${s.non2xx}, errors ${s.errors}` : '';
  return `${name} ${Math.round(s.rps)} req/s (p50 ${s.p50_ms} / p99 ${s.p99_ms} ms, Node ${s.node_cpu_us_per_req} µs/req${pg}${bad})`;
}

/** One service measured in a comparison: its label in the output, its server, and its requests. */
export interface Contender {
  /** appended to the scenario's name in the output (e.g. "+0 stored"); undefined: the scenario's name alone */
  label?: string;
  server: Server;
  scenario: Scenario;
}

export async function compare(servers: { bare: Server; limit: Server; service: Server }, sc: Scenario, cfg: RoundsConfig): Promise<ScenarioResult> {
  const [result] = await compareServices(servers, [{ server: servers.service, scenario: sc }], cfg);
  return result!;
}

/**
 * A warm-up of each server, then rounds alternating bare → limit → each
 * contender in turn; the references get the first contender's requests.
 * One result per contender, sharing the references' rounds.
 */
export async function compareServices(refs: { bare: Server; limit: Server }, contenders: Contender[], cfg: RoundsConfig): Promise<ScenarioResult[]> {
  const { log } = cfg;
  const first = contenders[0]!.scenario;
  for (const c of contenders) {
    if (c.scenario.prepare) {
      log(`\n== ${c.scenario.key}${c.label ? ` [${c.label}]` : ''}: preparing`);
      await c.scenario.prepare(c.server);
    }
  }
  log(`\n== ${first.key}: ${first.title}: warm-up`);
  await shoot(refs.bare, first.make, cfg.warmup.references, cfg);
  if (first.limit) await shoot(refs.limit, first.make, cfg.warmup.references, cfg);
  for (const c of contenders) await shoot(c.server, c.scenario.make, cfg.warmup.service, cfg);
  const rounds: ScenarioResult['per_round'][] = contenders.map(() => []);
  for (let i = 0; i < cfg.rounds; i++) {
    const bare = await shoot(refs.bare, first.make, cfg.duration, cfg);
    const limit = first.limit ? await shoot(refs.limit, first.make, cfg.duration, cfg) : null;
    log(`   round ${i + 1}: ${roundLine('bare', bare)}`);
    if (limit) log(`            ${roundLine('limit', limit)}`);
    for (const [k, c] of contenders.entries()) {
      const start = monotonicUs();
      const service = await shoot(c.server, c.scenario.make, cfg.duration, cfg);
      cfg.serviceWindows.push({ scenario: c.scenario.key + (c.label ? ` [${c.label}]` : ''), round: i + 1, start_us: start, end_us: monotonicUs() });
      const toLimit = limit ? ratio(service.rps, limit.rps) : null;
      const toBare = ratio(service.rps, bare.rps);
      rounds[k]!.push({ service_to_limit: toLimit, service_to_bare: toBare, bare, limit, service });
      log(`            ${roundLine(c.label ? `service [${c.label}]` : 'service', service)}`);
      log(`            service/limit ${toLimit ?? '—'}, service/bare ${toBare}`);
    }
  }
  return contenders.map((c, k) => {
    const r = rounds[k]!;
    const bare = summarise(r.map((p) => p.bare));
    const limit = first.limit ? summarise(r.map((p) => p.limit!)) : null;
    const service = summarise(r.map((p) => p.service));
    return {
      scenario: c.scenario.key,
      title: c.scenario.title,
      bare,
      limit,
      service,
      service_to_limit: limit ? ratio(service.rps, limit.rps) : null,
      service_to_bare: ratio(service.rps, bare.rps),
      limit_to_bare: limit ? ratio(limit.rps, bare.rps) : null,
      per_round: r,
      ...(c.label ? { stored_events: c.label } : {}),
    };
  });
}
