// The printed lines of --stored, the mixed scenario and the WAL shots
// (scripts/bench-report-extra.ts): the figures land in the right cells.
import { expect } from 'chai';
import type { MixedResult } from '../../scripts/bench-mixed.ts';
import { mixedLines, ratesLines, storedLines, walLines } from '../../scripts/bench-report-extra.ts';
import type { RatesResult } from '../../scripts/bench-rates.ts';
import type { ScenarioResult, ServerSummary } from '../../scripts/bench-rounds.ts';
import type { WalShot } from '../../scripts/bench-wal.ts';

const summary = (rps: number, p99 = 20, pg: number | null = 100): ServerSummary => ({
  rps,
  p50_ms: 5,
  p99_ms: p99,
  node_cpu_us_per_req: 200,
  pg_cpu_us_per_req: pg,
  node_cores: 1,
  pg_cores: 0.5,
  non2xx: 0,
  errors: 0,
});
const result = (label: string, rps: number, extra: Partial<ScenarioResult> = {}): ScenarioResult => ({
  scenario: 'view',
  title: 'view',
  bare: summary(20_000),
  limit: summary(10_000),
  service: summary(rps, 30, 150),
  service_to_limit: rps / 10_000,
  service_to_bare: rps / 20_000,
  limit_to_bare: 0.5,
  per_round: [],
  stored_events: label,
  ...extra,
});

describe('bench report lines', () => {
  it('puts stored against empty, with the rounds and the sizes', () => {
    const lines = storedLines({
      facts: {
        events: 10_000_000,
        visitors: 2_000_000,
        persons_with_profile: 500_000,
        contacts: 100_000,
        seconds: { events: 300, others: 60, vacuum: 40, checkpoint: 2, total: 402 },
        database_bytes: 5 * 2 ** 30,
        events_bytes: 3.5 * 2 ** 30,
        visitors_bytes: 2 ** 30,
      },
      results: [
        result('+0 stored', 5000),
        result('+10,000,000 stored', 4600, { stored_to_empty: 0.92, stored_to_empty_per_round: [0.9, 0.92, 0.95] }),
      ],
      wal: [],
    });
    expect(lines[0])
      .to.contain('10,000,000 events')
      .and.contain('2,000,000 visitors')
      .and.contain('loaded in 402 s')
      .and.contain('database 5.00 GiB');
    expect(lines.at(-1)).to.equal('| view | 5,000 | 4,600 | **0.92×** (0.90, 0.92, 0.95) | ≥ 0.90× | 0.50× → 0.46× | 30 → 30 | 150 → 150 |');
  });

  it('gives WAL per request, its ratio to the limit of the same scenario, and where it goes', () => {
    const shot = (scenario: string, server: string, b: number, relations: WalShot['relations'] = null): WalShot => ({
      scenario,
      server,
      requests: 1000,
      bytes: b * 1000,
      bytes_per_request: b,
      fpi_bytes_per_request: relations ? 40 : null,
      relations,
    });
    const lines = walLines([
      shot('view', 'limit', 300),
      shot('view', 'service', 1200, [
        {
          relation: 'events',
          bytes_per_request: 400,
          records_per_request: 1,
          fpi_bytes_per_request: 0,
          types: { INSERT: 0.98, 'INSERT+INIT': 0.02 },
        },
        { relation: 'events_visitor', bytes_per_request: 300, records_per_request: 1, fpi_bytes_per_request: 40, types: { INSERT_LEAF: 1 } },
        { relation: 'events (free space map)', bytes_per_request: 25, records_per_request: 0, fpi_bytes_per_request: 25, types: {} },
      ]),
      shot('identify', 'limit', 400),
      { ...shot('identify', 'service', 2000), note: 'pg_walinspect not usable here' },
    ]);
    expect(lines).to.include(
      '| view | service | 1,000 | **1,200** | 40 | 4.00× | events 400 (INSERT 0.98, INSERT+INIT 0.02); events_visitor 300 (INSERT_LEAF 1.00, FPI 40); events (free space map) 25 (FPI 25) |',
    );
    expect(lines).to.include('| view | limit | 1,000 | **300** | — | — | — |');
    expect(lines).to.include('| identify | service | 1,000 | **2,000** | — | 5.00× | — pg_walinspect not usable here |');
  });

  it('reports the mixed load’s rated phase and commit → arrival with its bounds', () => {
    const spread = (p50: number, p99: number) => ({ samples: 100, p50_ms: p50, p99_ms: p99, max_ms: p99 + 1 });
    const m = {
      mix: { load: 0.5, exported: 0.1, identify: 0.05, fresh: 0.5, contacts: 1000 },
      rounds: [{ commit_to_arrival: spread(40, 200), occurred_to_arrival: spread(45, 210), ack_to_arrival: spread(38, 190) }],
      target_rps: 2000,
      service_achieved_rps: 1990,
      service_p50_ms: 4,
      service_p99_ms: 18.5,
      service_lag_p99_ms: 1.2,
      service_node_cpu_us_per_req: 250,
      service_pg_cpu_us_per_req: 120,
      limit_achieved_rps: 2000,
      limit_p50_ms: 2,
      limit_p99_ms: 6,
      limit_lag_p99_ms: 1,
      exported_acked: 2000,
      exported_arrived: 1999,
      commit_to_arrival: spread(40, 200),
      commit_to_arrival_source: 'the events’ commit timestamps, track_commit_timestamp on',
      occurred_to_arrival: spread(45, 210),
      ack_to_arrival: spread(38, 190),
      requests_by_kind: { exported: 10, identify: 5, fresh: 42, returning: 43 },
    } as unknown as MixedResult;
    const lines = mixedLines(m);
    expect(lines[0]).to.contain('10 % page views by 1,000 contacts').and.contain('85 % anonymous page views (50 % of them by new visitors');
    expect(lines).to.include('| service | 2,000 | 1,990 | 4 / **18.5** | 1.2 | 250 / 120 |');
    expect(lines).to.include('| limit, same rate | 2,000 | 2,000 | 2 / 6 | 1 | — |');
    expect(lines.join('\n')).to.contain('1,999 of 2,000 acknowledged arrived').and.contain('**40 / 200**, max 201');
    expect(lines.join('\n')).to.contain('upper bound, from occurred_at').and.contain('45 / 210');
  });

  it('puts the service beside the limit at each open-loop rate, with the p99 of every round', () => {
    const shot = (p99: number, pg: number | null) => ({
      target_rps: 2500,
      achieved_rps: 2490,
      sent: 25_000,
      completed: 25_000,
      non2xx: 0,
      errors: 0,
      seconds: 10,
      p50_ms: 2,
      p99_ms: p99,
      max_ms: p99 * 2,
      lag_p99_ms: 0.4,
      node_cpu_us_per_req: 150,
      pg_cpu_us_per_req: pg,
    });
    const summary = (p99: number, pg: number | null) => {
      const { target_rps: _t, sent: _s, completed: _c, seconds: _x, ...rest } = shot(p99, pg);
      return rest;
    };
    const r: RatesResult = {
      scenario: 'view',
      limit_closed_loop_rps: 10_000,
      limit_closed_loop_source: 'the view scenario’s limit median in this run',
      connections: 64,
      rates: [
        {
          share: 0.25,
          target_rps: 2500,
          limit: summary(4, 30),
          service: {
            ...summary(12.5, null),
            errors: 3,
            batches: { count: 9000, items_per_batch: 2.8, commit_mean_ms: 3.12, commit_p50_at_most_ms: 2.5, commit_p99_at_most_ms: null },
          },
          rounds: [
            { limit: shot(4, 30), service: shot(12.5, null) },
            { limit: shot(5, 31), service: shot(14, null) },
          ],
        },
      ],
    };
    const lines = ratesLines(r);
    expect(lines[0]).to.contain('open loop').and.contain('closed-loop 10,000 req/s').and.contain('medians of 2 rounds');
    expect(lines).to.include('| 2,500 (25 %) | limit | 2,490 | 2 / **4** / 8 | 4, 5 | 0.4 | 150 / 30 | — |');
    expect(lines).to.include(
      '| 2,500 (25 %) | service | 2,490, non-2xx 0, errors 3 | 2 / **12.5** / 25 | 12.5, 14 | 0.4 | 150 / — | 2.8, 3.1 / ≤ 2.5 / — |',
    );
  });
});
