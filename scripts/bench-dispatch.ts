// The dispatch scenario of `npm run bench`: a local keep-alive receiver (in
// the bench process), an integration pointing at it, then
// 1. throughput, in rounds alternating a raw got loop and the dispatcher:
//    - got: N requests in flight from a child process (scripts/bench-got-loop.ts),
//      N being the dispatcher's per-integration concurrency (WEBHOOK_CONCURRENCY), the deliveries'
//      headers and body size, keep-alive;
//    - dispatch: a backlog of deliveries committed in one transaction and
//      drained by the service's dispatcher (deliveries/s from the commit to the
//      last arrival); CPU counted from the commit until every outcome is written;
// 2. latency: events of identified visitors sent at a steady rate; for each,
//    the time from its 202 (sent after commit) to the arrival of its
//    notification: a LOWER bound of commit → arrival, since the commit came
//    before the 202 (the mixed scenario, scripts/bench-mixed.ts, measures
//    from the commit itself).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { type RssPeak, notPostgres, treeCpuUs } from './bench-proc.ts';
import { type ServiceWindow, median, monotonicUs } from './bench-rounds.ts';
import { DEFAULT_SHARE } from '../src/webhooks/fair-share.rules.ts';
import { ROOT, compiledScript, spawnScript, stopProcess } from './bench-servers.ts';
import type { WalProbe, WalShot } from './bench-wal.ts';

export interface DispatchBenchInput {
  serviceBase: string;
  servicePid: number;
  postmasterPid: number | undefined;
  databaseUrl: string;
  token: string;
  org: number;
  receiverPort: number;
  quick: boolean;
  rounds: number;
  /** requests in flight in the got loop: the dispatcher's per-integration concurrency */
  concurrency: number;
  gotMode: 'prepared' | 'plain';
  serviceRss: RssPeak;
  serviceWindows: ServiceWindow[];
  /** when given (the WAL shots are on), the last round's WAL is split by relation, per delivery */
  wal?: WalProbe | undefined;
  log(line: string): void;
}

/**
 * The dispatcher's requests in flight per integration: WEBHOOK_CONCURRENCY
 * when set (the bench passes it on to the service), else the default the
 * dispatcher takes (DEFAULT_SHARE in src/webhooks/fair-share.rules.ts).
 */
export function dispatcherConcurrency(env: NodeJS.ProcessEnv = process.env): { n: number; from: string } {
  const set = Number(env.WEBHOOK_CONCURRENCY);
  if (Number.isSafeInteger(set) && set > 0) return { n: set, from: 'WEBHOOK_CONCURRENCY' };
  return { n: DEFAULT_SHARE.perIntegration, from: 'the dispatcher’s default (WEBHOOK_CONCURRENCY unset)' };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench reads the API's JSON answers untyped
async function api(base: string, method: string, p: string, token: string, body?: unknown): Promise<any> {
  const r = await fetch(base + p, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** the contact of backlog delivery n, as SQL builds it */
const BACKLOG_CONTACT = `'backlog-' || n || '@bench.example'`;
/** the body of backlog delivery n, as SQL builds it (the got loop sends one of the same size) */
const backlogBody = (org: string, day: string) => `json_build_object('medium', 'event', 'contact', ${BACKLOG_CONTACT},
  'type', 'EMAIL', 'date', ${day}::text, 'org_id', ${org}::bigint::text, 'event', 'view')::text`;

interface GotRound {
  rps: number;
  ok: number;
  errors: number;
  seconds: number;
  node_cpu_us_per_req: number;
}

interface DrainRound {
  deliveries_per_second: number;
  delivered: number;
  seconds: number;
  node_cpu_us_per_delivery: number;
  pg_cpu_us_per_delivery: number | null;
  /** TCP connections the receiver accepted during the round (keep-alive: at most the dispatcher's requests in flight) */
  connections_opened: number;
  /** WAL the whole cluster wrote from the backlog's commit until every outcome was written, per delivery (claims, outcomes, attempt rows, index entries; autovacuum too if it ran) */
  wal_bytes_per_delivery: number;
}

export async function benchDispatch(input: DispatchBenchInput) {
  const { serviceBase, token, org, log } = input;
  // the receiver: keep-alive, answers 204, notes when each contact's notification arrived
  const arrivals = new Map<string, number>();
  let received = 0;
  let lastArrival = 0;
  const receiver = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = performance.now();
      received++;
      lastArrival = now;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { contact?: string };
        if (body.contact && !arrivals.has(body.contact)) arrivals.set(body.contact, now);
      } catch {
        // counted anyway
      }
      res.statusCode = 204;
      res.end();
    });
  });
  let connections = 0;
  receiver.on('connection', () => connections++);
  await new Promise<void>((r) => receiver.listen(input.receiverPort, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${input.receiverPort}/hook`;
  const hook = await api(serviceBase, 'POST', '/v1/rest/bench/integration', token, {
    org_id: org,
    active: true,
    type: 'WEBHOOK',
    data: { endpoint, do_events: true, do_contacts: false, httpTimeout: '10' },
  });
  const integrationId = hook.integration.id as number;
  const db = new pg.Client({ connectionString: input.databaseUrl, application_name: 'trackway-bench' });
  db.on('error', () => {});
  await db.connect();
  const day = new Date().toISOString().slice(0, 10);
  const backlog = input.quick ? 5_000 : 20_000;

  // the got loop: the same body size and headers as a delivery
  const sampleBody = (
    await db.query<{ b: string }>(`SELECT ${backlogBody('$1', '$2')} AS b FROM (SELECT $3::int AS n) AS x`, [org, day, backlog / 2])
  ).rows[0]!.b;
  const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const headers = {
    'content-type': 'application/json',
    'user-agent': `Trackway-Webhooks/${version} (+${serviceBase.replace('127.0.0.1', 'localhost')}/docs/webhooks)`,
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': 'v1,' + Buffer.alloc(32, 7).toString('base64'),
  };
  const gotChild = spawnScript(
    compiledScript('bench-got-loop.ts'),
    {
      GOT_URL: endpoint,
      GOT_CONCURRENCY: String(input.concurrency),
      GOT_MODE: input.gotMode,
      GOT_BODY: sampleBody,
      GOT_HEADERS: JSON.stringify(headers),
    },
    'pipe',
  );
  const lines = readline.createInterface({ input: gotChild.stdout! })[Symbol.asyncIterator]();
  const nextLine = async () => {
    const r = await lines.next();
    if (r.done) throw new Error('the got loop exited');
    return r.value;
  };
  if ((await nextLine()) !== 'ready') throw new Error('the got loop did not start');

  const gotRounds: GotRound[] = [];
  const drainRounds: DrainRound[] = [];
  /** the last round's WAL by relation, per delivery */
  let walSplit: WalShot | null = null;
  const walBytes = async () =>
    Number((await db.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS b`)).rows[0]!.b);
  const pgCpu = () => (input.postmasterPid !== undefined ? treeCpuUs(input.postmasterPid) : undefined);
  for (let round = 1; round <= input.rounds; round++) {
    // 1a. got alone
    const g0 = treeCpuUs(gotChild.pid!);
    gotChild.stdin!.write(`go ${backlog}\n`);
    const g = JSON.parse(await nextLine()) as { ok: number; errors: number; seconds: number };
    const gUs = treeCpuUs(gotChild.pid!) - g0;
    const gotRound = {
      rps: Math.round(g.ok / g.seconds),
      ok: g.ok,
      errors: g.errors,
      seconds: Number(g.seconds.toFixed(2)),
      node_cpu_us_per_req: Math.round(gUs / Math.max(1, g.ok)),
    };
    gotRounds.push(gotRound);

    // 1b. the dispatcher draining a committed backlog
    received = 0;
    input.serviceRss.start();
    await db.query('BEGIN');
    await db.query(
      `INSERT INTO deliveries (org_id, integration_id, kind, contact, body, next_attempt_at)
       SELECT $1::bigint, $2::bigint, 'event', ${BACKLOG_CONTACT}, ${backlogBody('$1', '$3')}, now() FROM generate_series(1, $4) AS n`,
      [org, integrationId, day, backlog],
    );
    await db.query(`SELECT pg_notify('trackway_deliveries', '')`);
    await db.query('COMMIT');
    const committed = performance.now();
    const windowStart = monotonicUs();
    const s0 = treeCpuUs(input.servicePid, notPostgres);
    const p0 = pgCpu();
    const c0 = connections;
    const split = input.wal && round === input.rounds ? input.wal : undefined;
    const l0 = split ? await split.lsn() : '';
    const w0 = await walBytes();
    while (received < backlog && performance.now() - committed < 300_000) await sleep(20);
    const drained = received;
    const seconds = (lastArrival - committed) / 1000;
    // outcomes are written in batches after the arrivals: counted in the CPU, not in the time
    for (let i = 0; i < 300; i++) {
      const left = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE integration_id = $1 AND status = 'pending'`, [
        integrationId,
      ]);
      if (left.rows[0]!.n === 0) break;
      await sleep(100);
    }
    const sUs = treeCpuUs(input.servicePid, notPostgres) - s0;
    input.serviceWindows.push({ scenario: 'dispatch', round, start_us: windowStart, end_us: monotonicUs() });
    const p1 = pgCpu();
    const w1 = await walBytes();
    if (split) walSplit = await split.span('service', l0, await split.lsn(), drained);
    input.serviceRss.stop();
    const drainRound = {
      deliveries_per_second: Math.round(drained / seconds),
      delivered: drained,
      seconds: Number(seconds.toFixed(2)),
      node_cpu_us_per_delivery: Math.round(sUs / Math.max(1, drained)),
      pg_cpu_us_per_delivery: p0 !== undefined && p1 !== undefined ? Math.round((p1 - p0) / Math.max(1, drained)) : null,
      connections_opened: connections - c0,
      wal_bytes_per_delivery: Math.round((w1 - w0) / Math.max(1, drained)),
    };
    drainRounds.push(drainRound);
    log(
      `   round ${round}: got ${gotRound.rps} req/s (${gotRound.node_cpu_us_per_req} µs/req${g.errors ? `, errors ${g.errors}` : ''}); ` +
        `dispatch ${drainRound.deliveries_per_second} deliveries/s (${drained}/${backlog} in ${drainRound.seconds} s, ` +
        `Node ${drainRound.node_cpu_us_per_delivery} µs, PG ${drainRound.pg_cpu_us_per_delivery ?? '—'} µs per delivery, ` +
        `WAL ${drainRound.wal_bytes_per_delivery} B per delivery, ${drainRound.connections_opened} connections opened); ` +
        `dispatch/got ${(drainRound.deliveries_per_second / gotRound.rps).toFixed(3)}`,
    );
  }
  gotChild.stdin!.end();
  await stopProcess(gotChild, 5_000);

  // 2. latency under a steady event rate
  const rate = input.quick ? 300 : 500;
  const latencySeconds = input.quick ? 5 : 10;
  const n = rate * latencySeconds;
  const run = Date.now().toString(36);
  const xff = { 'x-forwarded-for': '81.2.69.160' };
  const visitors = Array.from({ length: n }, (_, i) => ({ core: `lat${run}-${i}`, email: `lat${run}-${i}@bench.example` }));
  // identify everyone first (do_contacts is off: no deliveries)
  for (let i = 0; i < visitors.length; i += 64) {
    await Promise.all(
      visitors.slice(i, i + 64).map(async (v) => {
        const payload = Buffer.from(JSON.stringify({ email: v.email })).toString('base64url');
        const r = await fetch(`${serviceBase}/jsv1/identify/${org}/r${run}/${v.core}/${payload}`, { headers: xff });
        await r.arrayBuffer();
      }),
    );
  }
  arrivals.clear();
  const acked = new Map<string, number>();
  input.serviceRss.start();
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const v = visitors[i]!;
    inFlight.push(
      fetch(`${serviceBase}/jsv1/${org}/r${run}/${v.core}/null/event/view`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...xff },
        body: JSON.stringify({ page: 'https://bench-shop.example/' }),
      }).then(async (r) => {
        await r.arrayBuffer();
        if (r.status === 202) acked.set(v.email, performance.now());
      }),
    );
  }
  await Promise.all(inFlight);
  const until = performance.now() + 30_000;
  while (arrivals.size < acked.size && performance.now() < until) await sleep(20);
  input.serviceRss.stop();
  const lat = [...acked]
    .filter(([c]) => arrivals.has(c))
    .map(([c, t]) => Math.max(0, arrivals.get(c)! - t))
    .sort((a, b) => a - b);
  // the same by the second the 202 came in: latency that grows second after second is a queue, a flat one a wait
  const bySecond: number[][] = Array.from({ length: latencySeconds + 1 }, () => []);
  for (const [c, t] of acked) {
    const at = arrivals.get(c);
    if (at !== undefined) bySecond[Math.min(latencySeconds, Math.floor((t - start) / 1000))]!.push(Math.max(0, at - t));
  }
  const perSecond = bySecond
    .filter((l) => l.length > 0)
    .map((l) => {
      l.sort((a, b) => a - b);
      return { n: l.length, p50_ms: Number(percentile(l, 50).toFixed(1)), p99_ms: Number(percentile(l, 99).toFixed(1)) };
    });
  log(
    `   steady ${rate} events/s for ${latencySeconds} s: ${arrivals.size}/${acked.size} notified; ` +
      `commit → arrival p50 ${percentile(lat, 50).toFixed(1)} ms, p99 ${percentile(lat, 99).toFixed(1)} ms` +
      `\n   by second of the 202 (p50/p99 ms): ${perSecond.map((s) => `${s.p50_ms}/${s.p99_ms}`).join(', ')}`,
  );

  await db.end();
  await new Promise<void>((r) => {
    receiver.closeAllConnections();
    receiver.close(() => r());
  });
  const dispatchRps = median(drainRounds.map((r) => r.deliveries_per_second));
  const gotRps = median(gotRounds.map((r) => r.rps));
  const pgPer = drainRounds.every((r) => r.pg_cpu_us_per_delivery !== null) ? median(drainRounds.map((r) => r.pg_cpu_us_per_delivery!)) : null;
  return {
    backlog,
    concurrency: input.concurrency,
    got_mode: input.gotMode,
    deliveries_per_second: Math.round(dispatchRps),
    got_requests_per_second: Math.round(gotRps),
    dispatch_to_got: Number((dispatchRps / gotRps).toFixed(3)),
    dispatch_to_got_per_round: drainRounds.map((d, i) => Number((d.deliveries_per_second / gotRounds[i]!.rps).toFixed(3))),
    node_cpu_us_per_delivery: Math.round(median(drainRounds.map((r) => r.node_cpu_us_per_delivery))),
    pg_cpu_us_per_delivery: pgPer === null ? null : Math.round(pgPer),
    got_node_cpu_us_per_req: Math.round(median(gotRounds.map((r) => r.node_cpu_us_per_req))),
    wal_bytes_per_delivery: Math.round(median(drainRounds.map((r) => r.wal_bytes_per_delivery))),
    /** the last round's WAL split by relation (claims, outcomes, attempt rows, their indexes), per delivery; null without the WAL shots */
    wal_by_relation: walSplit,
    rounds: drainRounds.map((d, i) => ({ dispatch: d, got: gotRounds[i]! })),
    latency_rate_per_second: rate,
    latency_events: acked.size,
    latency_notified: lat.length,
    commit_to_arrival_p50_ms: Number(percentile(lat, 50).toFixed(1)),
    commit_to_arrival_p99_ms: Number(percentile(lat, 99).toFixed(1)),
    commit_to_arrival_per_second: perSecond,
  };
}

export type DispatchResult = Awaited<ReturnType<typeof benchDispatch>>;
