// The printed summary of `npm run bench`: one table (service, bare and the
// durable limit per scenario), then the dispatch, latency and RSS lines.
// Markdown, so it can be pasted into BENCHMARKS.md as it is.
import type { DispatchResult } from './bench-dispatch.ts';
import type { ScenarioResult, ServerSummary } from './bench-rounds.ts';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const x = (n: number | null) => (n === null ? '—' : `${n.toFixed(2)}×`);
const ms = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

function spread(values: (number | null)[]): string {
  const v = values.filter((n): n is number => n !== null);
  if (v.length === 0) return '';
  return ` (${Math.min(...v).toFixed(2)}–${Math.max(...v).toFixed(2)})`;
}

function row(r: ScenarioResult, name: 'bare' | 'limit' | 'service', s: ServerSummary, label: string): string {
  const toLimit = r.limit ? s.rps / r.limit.rps : null;
  const toBare = s.rps / r.bare.rps;
  let limitCell = x(toLimit);
  let bareCell = x(toBare);
  if (name === 'service') {
    limitCell = r.limit ? `**${x(toLimit)}**${spread(r.per_round.map((p) => p.service_to_limit))}` : '—';
    bareCell = `${x(toBare)}${spread(r.per_round.map((p) => p.service_to_bare))}`;
  }
  const bad = s.non2xx + s.errors > 0 ? `${s.non2xx} / ${s.errors}` : '0';
  return `| ${label} | ${name} | ${int(s.rps)} | ${limitCell} | ${bareCell} | ${ms(s.p50_ms)} | ${ms(s.p99_ms)} | ${int(s.node_cpu_us_per_req)} | ${
    s.pg_cpu_us_per_req === null ? '—' : int(s.pg_cpu_us_per_req)
  } | ${bad} |`;
}

export function resultsTable(results: ScenarioResult[]): string[] {
  const out = [
    '| scenario | server | req/s (median) | ratio to limit | ratio to bare | p50 ms | p99 ms | Node CPU µs/req | PostgreSQL CPU µs/req | non-2xx / errors |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const label = r.stored_events ? `${r.scenario} [${r.stored_events}]` : r.scenario;
    out.push(row(r, 'service', r.service, label));
    if (r.limit) out.push(row(r, 'limit', r.limit, ''));
    out.push(row(r, 'bare', r.bare, ''));
  }
  return out;
}

export function perRoundLines(results: ScenarioResult[]): string[] {
  return results.map((r) => {
    const lim = r.limit ? `service/limit ${r.per_round.map((p) => p.service_to_limit!.toFixed(2)).join(', ')}; ` : '';
    const label = r.stored_events ? `${r.scenario} [${r.stored_events}]` : r.scenario;
    return `${label}: ${lim}service/bare ${r.per_round.map((p) => p.service_to_bare.toFixed(2)).join(', ')}`;
  });
}

export function dispatchLines(d: DispatchResult): string[] {
  return [
    `dispatch (backlog of ${int(d.backlog)} to one local keep-alive receiver, median of ${d.rounds.length}): ` +
      `**${int(d.deliveries_per_second)} deliveries/s**; raw got loop (${d.concurrency} in flight, ${d.got_mode}) ` +
      `${int(d.got_requests_per_second)} req/s → dispatch/got **${x(d.dispatch_to_got)}** (rounds ${d.dispatch_to_got_per_round.map((n) => n.toFixed(2)).join(', ')})`,
    `dispatch CPU: service Node ${int(d.node_cpu_us_per_delivery)} µs/delivery (got loop alone ${int(d.got_node_cpu_us_per_req)} µs/request), ` +
      `PostgreSQL ${d.pg_cpu_us_per_delivery === null ? '—' : int(d.pg_cpu_us_per_delivery)} µs/delivery, WAL ${int(d.wal_bytes_per_delivery)} B/delivery`,
    `202 → arrival, a lower bound of commit → arrival (steady ${d.latency_rate_per_second} events/s, ${d.latency_notified}/${d.latency_events} notified): ` +
      `p50 ${d.commit_to_arrival_p50_ms} ms, p99 ${d.commit_to_arrival_p99_ms} ms`,
  ];
}

export interface RssReport {
  idle_sum_mb: number;
  peak_sum_mb: number;
  peak_largest_process_mb: number;
  processes: number;
  /** scenario → process role (primary, worker N) → peak RSS in MB during that scenario's service rounds */
  by_scenario?: Record<string, Record<string, number>>;
}

export function rssLine(r: RssReport): string {
  const line =
    `service peak RSS during its rounds: **${int(r.peak_sum_mb)} MB** summed over ${r.processes} process${r.processes === 1 ? '' : 'es'}, ` +
    `largest single process ${int(r.peak_largest_process_mb)} MB (idle after start: ${int(r.idle_sum_mb)} MB)`;
  const scenarios = Object.entries(r.by_scenario ?? {});
  if (scenarios.length === 0) return line;
  const each = scenarios.map(
    ([s, roles]) =>
      `${s}: ${Object.entries(roles)
        .map(([role, mb]) => `${role} ${int(mb)}`)
        .join(', ')}`,
  );
  return `${line}\npeak RSS per scenario, MB (a process keeps what earlier scenarios grew it to): ${each.join('; ')}`;
}
