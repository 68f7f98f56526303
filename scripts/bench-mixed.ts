// The mixed scenario of `npm run bench` (BENCHMARKS.md "Mixed load"): a
// shop's traffic (scripts/bench-mix.ts) in an organisation of its own that
// exports events to a local keep-alive receiver in a child process
// (scripts/bench-receiver.ts). Each round, in turn:
//   1. bare, limit and service unthrottled (autocannon, as every scenario):
//      the mix's own maximum, and its ratios;
//   2. the deliveries those caused are drained;
//   3. limit, then service, at `--mixed-load` (50 %) of the service's
//      maximum of this round, open loop (scripts/bench-paced.ts): ingest
//      p50/p99 from each request's due time, the rate achieved;
//   4. each exported event of the service's rated phase is paired with its
//      arrival at the receiver: commit → arrival.
// Commit → arrival is measured three ways, and the output names which:
//   - exact: the arrival against the commit time of the event's row
//     (pg_xact_commit_timestamp(xmin), taken as PostgreSQL writes the commit
//     record), when the server runs with track_commit_timestamp (the bench
//     turns it on for its embedded PostgreSQL);
//   - upper bound: against the event's occurred_at (the service stamps it
//     when the request is read, before the batch commits);
//   - lower bound: against the end of the 202 at the client (sent after the
//     commit).
// All three clocks are this machine's CLOCK_REALTIME.
import type { ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import pg from 'pg';
import type { MixOptions } from './bench-args.ts';
import { mixedRequests } from './bench-mix.ts';
import { type PacedShot, paced, pacedMeasured, percentile } from './bench-paced.ts';
import {
  type RoundsConfig,
  type ScenarioResult,
  type Shot,
  type RequestFactory,
  monotonicUs,
  ratio,
  roundLine,
  shoot,
  summarise,
} from './bench-rounds.ts';
import { type Server, compiledScript, spawnScript, stopProcess } from './bench-servers.ts';
import type { WalProbe, WalShot } from './bench-wal.ts';

export interface MixedInput {
  servers: { bare: Server; limit: Server; service: Server };
  cfg: RoundsConfig;
  mix: MixOptions;
  org: number;
  domain: string;
  token: string;
  run: string;
  databaseUrl: string;
  receiverPort: number;
  /** the server keeps commit timestamps (track_commit_timestamp = on) */
  commitTimestamps: boolean;
  send(server: Server, make: RequestFactory, amount: number): Promise<void>;
  api(method: string, path: string, body: unknown): Promise<unknown>;
  wal: WalProbe | undefined;
  walEvents: number;
}

export interface Spread {
  samples: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface MixedRound {
  target_rps: number;
  limit: PacedShot;
  service: PacedShot & { node_cpu_us_per_req: number; pg_cpu_us_per_req: number | null };
  exported_acked: number;
  exported_arrived: number;
  commit_to_arrival: Spread | null;
  ack_to_arrival: Spread;
  occurred_to_arrival: Spread;
}

export interface MixedResult {
  mix: MixOptions;
  /** the unthrottled rounds, as every other scenario reports them */
  max: ScenarioResult;
  rounds: MixedRound[];
  /** medians over the rounds */
  target_rps: number;
  service_achieved_rps: number;
  service_p50_ms: number;
  service_p99_ms: number;
  service_lag_p99_ms: number;
  service_node_cpu_us_per_req: number;
  service_pg_cpu_us_per_req: number | null;
  limit_achieved_rps: number;
  limit_p50_ms: number;
  limit_p99_ms: number;
  limit_lag_p99_ms: number;
  /** over every exported event of every round */
  exported_acked: number;
  exported_arrived: number;
  commit_to_arrival: Spread | null;
  commit_to_arrival_source: string;
  ack_to_arrival: Spread;
  occurred_to_arrival: Spread;
  wal: WalShot[];
  requests_by_kind: Record<string, number>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const r = (n: number) => Number(n.toFixed(1));
  return { samples: s.length, p50_ms: r(percentile(s, 50)), p99_ms: r(percentile(s, 99)), max_ms: r(s.at(-1) ?? 0) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

type Arrival = [number, string | null, string | null, string | null];

/** The receiver child: started, asked for its records, stopped. */
async function startReceiver(port: number) {
  const child: ChildProcess = spawnScript(compiledScript('bench-receiver.ts'), { RECEIVER_PORT: String(port) }, 'pipe');
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => {
    const r = await lines.next();
    if (r.done) throw new Error('the receiver exited');
    return r.value;
  };
  if ((await next()) !== 'ready') throw new Error('the receiver did not start');
  return {
    child,
    async dump(): Promise<Arrival[]> {
      child.stdin!.write('dump\n');
      return (JSON.parse(await next()) as { records: Arrival[] }).records;
    },
    async stop() {
      child.stdin!.end();
      await stopProcess(child, 5_000);
    },
  };
}

export async function benchMixed(input: MixedInput): Promise<MixedResult> {
  const { servers, cfg, mix } = input;
  const { log } = cfg;
  const receiver = await startReceiver(input.receiverPort);
  const db = new pg.Client({ connectionString: input.databaseUrl, application_name: 'trackway-bench' });
  db.on('error', () => {});
  await db.connect();
  try {
    await input.api('POST', '/v1/rest/bench/integration', {
      org_id: input.org,
      active: true,
      type: 'WEBHOOK',
      data: { endpoint: `http://127.0.0.1:${input.receiverPort}/hook`, do_events: true, do_contacts: false, httpTimeout: '10' },
    });
    const reqs = mixedRequests(input.org, input.run, input.domain, mix);
    /** waits until the organisation has no pending delivery (the dispatcher caught up) */
    const drain = async () => {
      const until = performance.now() + 120_000;
      for (;;) {
        const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE org_id = $1 AND status = 'pending'`, [
          input.org,
        ]);
        if (rows[0]!.n === 0) return;
        if (performance.now() > until) return log(`   (still ${rows[0]!.n} deliveries pending after 120 s: going on)`);
        await sleep(100);
      }
    };

    log(`\n== mixed: preparing (${mix.contacts} contacts identified, 1,000 known anonymous visitors)`);
    await input.send(servers.service, reqs.contactIdentifies(), mix.contacts);
    await input.send(servers.service, reqs.returningViews(), 1000);
    log('\n== mixed: warm-up');
    await shoot(servers.bare, reqs.make, cfg.warmup.references, cfg);
    await shoot(servers.limit, reqs.make, cfg.warmup.references, cfg);
    await shoot(servers.service, reqs.make, cfg.warmup.service, cfg);
    await drain();
    await receiver.dump();

    const maxRounds: { bare: Shot; limit: Shot; service: Shot }[] = [];
    const rounds: MixedRound[] = [];
    const all = { commit: [] as number[], ack: [] as number[], occurred: [] as number[], acked: 0, arrived: 0 };
    for (let i = 1; i <= cfg.rounds; i++) {
      const bare = await shoot(servers.bare, reqs.make, cfg.duration, cfg);
      const limit = await shoot(servers.limit, reqs.make, cfg.duration, cfg);
      const start = monotonicUs();
      const service = await shoot(servers.service, reqs.make, cfg.duration, cfg);
      cfg.serviceWindows.push({ scenario: 'mixed', round: i, start_us: start, end_us: monotonicUs() });
      maxRounds.push({ bare, limit, service });
      log(`   round ${i}: ${roundLine('bare', bare)}\n            ${roundLine('limit', limit)}\n            ${roundLine('service', service)}`);
      await drain();
      await receiver.dump();

      const rate = Math.max(1, Math.round(service.rps * mix.load));
      const paceOpts = { rate, seconds: cfg.duration, connections: cfg.connections };
      reqs.setPhase(`L${i}`);
      const limitRated = await paced(servers.limit.base, reqs.make, paceOpts);
      reqs.setPhase(`S${i}`);
      const serviceRated = await pacedMeasured(servers.service, reqs.make, paceOpts, cfg, { scenario: 'mixed-rated', round: i });

      // every exported event acknowledged in this phase, paired with its arrival
      await drain();
      const arrivals = new Map<string, Arrival>();
      for (const a of await receiver.dump()) if (a[3] && !arrivals.has(a[3])) arrivals.set(a[3], a);
      const pairs = [...serviceRated.acked].flatMap(([tag, ack]) => {
        const a = arrivals.get(tag);
        return a ? [{ ack, arrival: a[0], eventId: a[1]!, occurredAt: a[2]! }] : [];
      });
      let commitLat: number[] | null = null;
      if (input.commitTimestamps && pairs.length > 0) {
        const { rows } = await db.query<{ id: string; ms: string | null }>(
          `SELECT e.id::text AS id, extract(epoch FROM pg_xact_commit_timestamp(e.xmin)) * 1000 AS ms
           FROM unnest($2::timestamptz[], $3::bigint[]) AS k(at, id)
           JOIN events e ON e.org_id = $1 AND e.received_at = k.at AND e.id = k.id`,
          [input.org, pairs.map((p) => p.occurredAt), pairs.map((p) => p.eventId)],
        );
        const commitMs = new Map(rows.filter((r) => r.ms !== null).map((r) => [r.id, Number(r.ms)]));
        commitLat = pairs.flatMap((p) => (commitMs.has(p.eventId) ? [p.arrival - commitMs.get(p.eventId)!] : []));
      }
      const ackLat = pairs.map((p) => Math.max(0, p.arrival - p.ack));
      const occLat = pairs.map((p) => p.arrival - Date.parse(p.occurredAt));
      all.ack.push(...ackLat);
      all.occurred.push(...occLat);
      if (commitLat) all.commit.push(...commitLat);
      all.acked += serviceRated.acked.size;
      all.arrived += pairs.length;
      const { acked: _a, ...limitShot } = limitRated;
      const { acked: _s, ...serviceShot } = serviceRated;
      const round: MixedRound = {
        target_rps: rate,
        limit: limitShot,
        service: serviceShot,
        exported_acked: serviceRated.acked.size,
        exported_arrived: pairs.length,
        commit_to_arrival: commitLat ? spread(commitLat) : null,
        ack_to_arrival: spread(ackLat),
        occurred_to_arrival: spread(occLat),
      };
      rounds.push(round);
      const c = round.commit_to_arrival;
      log(
        `            at ${rate} req/s (${Math.round(mix.load * 100)} % of this round's service): ` +
          `limit p50 ${limitShot.p50_ms} / p99 ${limitShot.p99_ms} ms; service ${serviceShot.achieved_rps} req/s, p50 ${serviceShot.p50_ms} / p99 ${serviceShot.p99_ms} ms ` +
          `(sender lag p99 ${serviceShot.lag_p99_ms} ms${serviceShot.non2xx || serviceShot.errors ? `, non-2xx ${serviceShot.non2xx}, errors ${serviceShot.errors}` : ''})\n` +
          `            exported ${pairs.length}/${serviceRated.acked.size} arrived; commit → arrival ` +
          (c ? `p50 ${c.p50_ms} / p99 ${c.p99_ms} ms` : '—') +
          ` (bounds: 202 → arrival p99 ${round.ack_to_arrival.p99_ms} ms, occurred_at → arrival p99 ${round.occurred_to_arrival.p99_ms} ms)`,
      );
    }

    const wal: WalShot[] = [];
    if (input.wal && input.walEvents > 0) {
      for (const server of [servers.limit, servers.service]) {
        wal.push(
          await input.wal.measure(
            server.name,
            async () => {
              const s = await shoot(server, reqs.make, 0, cfg, { amount: input.walEvents });
              return s.completed - s.non2xx;
            },
            server.name === 'service' ? drain : undefined,
          ),
        );
      }
      await receiver.dump();
    }

    const m = (f: (r: MixedRound) => number) => median(rounds.map(f));
    const b = summarise(maxRounds.map((r) => r.bare));
    const l = summarise(maxRounds.map((r) => r.limit));
    const s = summarise(maxRounds.map((r) => r.service));
    const max: ScenarioResult = {
      scenario: 'mixed',
      title: 'the mix unthrottled (shop traffic in an organisation exporting events)',
      bare: b,
      limit: l,
      service: s,
      service_to_limit: ratio(s.rps, l.rps),
      service_to_bare: ratio(s.rps, b.rps),
      limit_to_bare: ratio(l.rps, b.rps),
      per_round: maxRounds.map((r) => ({
        service_to_limit: ratio(r.service.rps, r.limit.rps),
        service_to_bare: ratio(r.service.rps, r.bare.rps),
        ...r,
      })),
    };
    return {
      mix,
      max,
      rounds,
      target_rps: m((r) => r.target_rps),
      service_achieved_rps: m((r) => r.service.achieved_rps),
      service_p50_ms: m((r) => r.service.p50_ms),
      service_p99_ms: m((r) => r.service.p99_ms),
      service_lag_p99_ms: m((r) => r.service.lag_p99_ms),
      service_node_cpu_us_per_req: m((r) => r.service.node_cpu_us_per_req),
      service_pg_cpu_us_per_req: rounds.every((r) => r.service.pg_cpu_us_per_req !== null) ? m((r) => r.service.pg_cpu_us_per_req!) : null,
      limit_achieved_rps: m((r) => r.limit.achieved_rps),
      limit_p50_ms: m((r) => r.limit.p50_ms),
      limit_p99_ms: m((r) => r.limit.p99_ms),
      limit_lag_p99_ms: m((r) => r.limit.lag_p99_ms),
      exported_acked: all.acked,
      exported_arrived: all.arrived,
      commit_to_arrival: input.commitTimestamps ? spread(all.commit) : null,
      commit_to_arrival_source: input.commitTimestamps
        ? 'the events’ commit timestamps, track_commit_timestamp on'
        : 'not measured exactly: the server runs without track_commit_timestamp (see the bounds)',
      ack_to_arrival: spread(all.ack),
      occurred_to_arrival: spread(all.occurred),
      wal,
      requests_by_kind: { ...reqs.counts },
    };
  } finally {
    await db.end();
    await receiver.stop();
  }
}
