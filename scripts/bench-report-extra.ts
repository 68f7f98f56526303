// The printed lines of `npm run bench` for --stored, the mixed scenario and
// write amplification (WAL bytes per request). Markdown, like the main table
// (scripts/bench-report.ts), so they paste into BENCHMARKS.md as they are.
import fs from 'node:fs';
import path from 'node:path';
import type { MixedResult, Spread } from './bench-mixed.ts';
import type { RatesResult } from './bench-rates.ts';
import type { ScenarioResult } from './bench-rounds.ts';
import type { StoredResult } from './bench-stored.ts';
import type { WalRelation, WalShot } from './bench-wal.ts';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (f: number) => `${Math.round(f * 1000) / 10} %`;
const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
const ms = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

export function storedLines(s: StoredResult): string[] {
  const f = s.facts;
  const out = [
    `stored (--stored): ${int(f.events)} events in the current month's partition, ${int(f.visitors)} visitors and persons ` +
      `(${int(f.persons_with_profile)} profiles), ${int(f.contacts)} contacts; loaded in ${f.seconds.total} s ` +
      `(events ${f.seconds.events} s, the rest ${f.seconds.others} s, VACUUM (ANALYZE) ${f.seconds.vacuum} s, CHECKPOINT ${f.seconds.checkpoint} s); ` +
      `database ${gib(f.database_bytes)} (events with indexes ${gib(f.events_bytes)}, visitors ${gib(f.visitors_bytes)})`,
    '',
    '| scenario | service req/s, empty | service req/s, stored | **stored/empty** (rounds) | target | service/limit, empty → stored | p99 ms, empty → stored | PostgreSQL CPU µs/req, empty → stored |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const pairs: [ScenarioResult, ScenarioResult][] = [];
  for (let i = 0; i + 1 < s.results.length; i += 2) pairs.push([s.results[i]!, s.results[i + 1]!]);
  for (const [e, t] of pairs) {
    const rounds = (t.stored_to_empty_per_round ?? []).map((n) => n.toFixed(2)).join(', ');
    const lim = (r: ScenarioResult) => (r.service_to_limit === null ? '—' : `${r.service_to_limit.toFixed(2)}×`);
    const pg = (r: ScenarioResult) => (r.service.pg_cpu_us_per_req === null ? '—' : int(r.service.pg_cpu_us_per_req));
    out.push(
      `| ${e.scenario} | ${int(e.service.rps)} | ${int(t.service.rps)} | **${(t.stored_to_empty ?? 0).toFixed(2)}×** (${rounds}) | ≥ 0.90× | ` +
        `${lim(e)} → ${lim(t)} | ${ms(e.service.p99_ms)} → ${ms(t.service.p99_ms)} | ${pg(e)} → ${pg(t)} |`,
    );
  }
  return out;
}

export function ratesLines(r: RatesResult): string[] {
  const pg = (n: number | null) => (n === null ? '—' : int(n));
  const out = [
    `rates (open loop: requests due at a fixed rate, latency from when each was due; ${r.scenario} requests, at most ${r.connections} connections): ` +
      `shares of the limit's closed-loop ${int(r.limit_closed_loop_rps)} req/s (${r.limit_closed_loop_source}); medians of ${r.rates[0]?.rounds.length ?? 0} rounds, limit and service alternating`,
    '',
    "| offered req/s (share of the limit) | server | achieved req/s | p50 / **p99** / max ms | p99 per round | sender lag p99 ms | Node / PostgreSQL CPU µs/req | the service's batches: items, commit mean / p50 / p99 ms (bucket bounds) |",
    '|---|---|---|---|---|---|---|---|',
  ];
  const bound = (n: number | null) => (n === null ? '—' : `≤ ${ms(n)}`);
  for (const rate of r.rates) {
    for (const name of ['limit', 'service'] as const) {
      const s = rate[name];
      const bad = s.non2xx || s.errors ? `, non-2xx ${int(s.non2xx)}, errors ${int(s.errors)}` : '';
      out.push(
        `| ${int(rate.target_rps)} (${Math.round(rate.share * 100)} %) | ${name} | ${int(s.achieved_rps)}${bad} | ${ms(s.p50_ms)} / **${ms(s.p99_ms)}** / ${ms(s.max_ms)} | ` +
          `${rate.rounds.map((x) => ms(x[name].p99_ms)).join(', ')} | ${ms(s.lag_p99_ms)} | ${int(s.node_cpu_us_per_req)} / ${pg(s.pg_cpu_us_per_req)} | ` +
          `${s.batches ? `${s.batches.items_per_batch}, ${ms(s.batches.commit_mean_ms)} / ${bound(s.batches.commit_p50_at_most_ms)} / ${bound(s.batches.commit_p99_at_most_ms)}` : '—'} |`,
      );
    }
  }
  return out;
}

const spreadCell = (s: Spread | null) => (s ? `${ms(s.p50_ms)} / ${ms(s.p99_ms)}` : '—');

export function mixedLines(m: MixedResult): string[] {
  const mix = m.mix;
  const anonymous = 1 - mix.exported - mix.identify;
  const c = m.commit_to_arrival;
  const perRound = (f: (r: MixedResult['rounds'][number]) => Spread | null) => m.rounds.map((r) => (f(r) ? ms(f(r)!.p99_ms) : '—')).join(', ');
  return [
    `mixed load (an organisation exporting events to a local keep-alive receiver): ${pct(mix.exported)} page views by ${int(mix.contacts)} contacts (exported), ` +
      `${pct(mix.identify)} identifies of new visitors, ${pct(anonymous)} anonymous page views (${pct(mix.fresh)} of them by new visitors, the rest by 1,000 known); ` +
      `requests sent by kind: ${Object.entries(m.requests_by_kind)
        .map(([k, n]) => `${k} ${int(n)}`)
        .join(', ')}`,
    '',
    `| at ${pct(mix.load)} of the round's service maximum (medians of ${m.rounds.length} rounds) | target req/s | achieved req/s | ingest p50 / p99 ms | sender lag p99 ms | Node / PostgreSQL CPU µs/req |`,
    '|---|---|---|---|---|---|',
    `| service | ${int(m.target_rps)} | ${int(m.service_achieved_rps)} | ${ms(m.service_p50_ms)} / **${ms(m.service_p99_ms)}** | ${ms(m.service_lag_p99_ms)} | ` +
      `${int(m.service_node_cpu_us_per_req)} / ${m.service_pg_cpu_us_per_req === null ? '—' : int(m.service_pg_cpu_us_per_req)} |`,
    `| limit, same rate | ${int(m.target_rps)} | ${int(m.limit_achieved_rps)} | ${ms(m.limit_p50_ms)} / ${ms(m.limit_p99_ms)} | ${ms(m.limit_lag_p99_ms)} | — |`,
    '',
    `commit → arrival of the exported events (${int(m.exported_arrived)} of ${int(m.exported_acked)} acknowledged arrived), p50 / p99 ms over all rounds:`,
    `- from the commit (${m.commit_to_arrival_source}): **${spreadCell(c)}**${c ? `, max ${ms(c.max_ms)}; p99 per round ${perRound((r) => r.commit_to_arrival)}` : ''}`,
    `- upper bound, from occurred_at (stamped when the request is read, before the commit): ${spreadCell(m.occurred_to_arrival)}; p99 per round ${perRound((r) => r.occurred_to_arrival)}`,
    `- lower bound, from the end of the 202 at the client (after the commit): ${spreadCell(m.ack_to_arrival)}; p99 per round ${perRound((r) => r.ack_to_arrival)}`,
  ];
}

/** the largest shares of a shot's WAL, e.g. `events 310 (INSERT 1.00)` */
function where(rels: WalRelation[] | null, top = 7): string {
  if (!rels) return '—';
  return rels
    .slice(0, top)
    .map((r) => {
      const types = Object.entries(r.types)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 2)
        .map(([t, n]) => `${t} ${n.toFixed(2)}`)
        .join(', ');
      const notes = [...(types ? [types] : []), ...(r.fpi_bytes_per_request > 0 ? [`FPI ${int(r.fpi_bytes_per_request)}`] : [])];
      return `${r.relation} ${int(r.bytes_per_request)}${notes.length ? ` (${notes.join(', ')})` : ''}`;
    })
    .join('; ');
}

export function walLines(shots: WalShot[]): string[] {
  const out = [
    'write amplification: WAL bytes per acknowledged request (a fixed number of requests per server; the whole cluster’s WAL over the shot)',
    '',
    '| scenario | server | requests | WAL B/request | of which full-page images | ratio to limit | where it goes, B/request (records per request by type) |',
    '|---|---|---|---|---|---|---|',
  ];
  const limitOf = new Map(shots.filter((s) => s.server === 'limit').map((s) => [s.scenario, s.bytes_per_request]));
  for (const s of shots) {
    const lim = limitOf.get(s.scenario);
    const r = s.server !== 'limit' && lim ? `${(s.bytes_per_request / lim).toFixed(2)}×` : '—';
    const fpi = s.fpi_bytes_per_request === null ? '—' : int(s.fpi_bytes_per_request);
    out.push(
      `| ${s.scenario ?? ''} | ${s.server} | ${int(s.requests)} | **${int(s.bytes_per_request)}** | ${fpi} | ${r} | ${where(s.relations)}${s.note ? ` ${s.note}` : ''} |`,
    );
  }
  return out;
}

/** The service writes its CPU profiles as it exits: the lines that list those of this run (started at `started`), once it has. */
export function profilesNote(root: string, resultsFile: string, started: number): string {
  const dir = path.dirname(resultsFile);
  const made = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile') && fs.statSync(path.join(dir, f)).mtimeMs >= started)
    .map((f) => path.relative(root, path.join(dir, f)));
  return made.length
    ? `CPU profiles of the service (one per thread and process): ${made.join(' ')}\n` +
        `summary of the measured service rounds only: npx tsx scripts/profile-summary.ts --bench ${path.relative(root, resultsFile)} [--scenario view] ${made.join(' ')}\n`
    : 'no CPU profile was written (did the service exit cleanly?)\n';
}
