// The dispatch part of `npm run bench`: a local keep-alive receiver, an
// integration pointing at it, then
// 1. throughput: a backlog of deliveries committed at once, drained by the
//    service's dispatcher (deliveries/s from commit to the last arrival);
// 2. latency: events of identified visitors sent at a steady rate; for each,
//    the time from its 202 (sent after commit) to the arrival of its
//    notification (an upper bound of commit → arrival).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';

export interface DispatchBenchInput {
  serviceBase: string;
  dataDir: string;
  token: string;
  org: number;
  receiverPort: number;
  quick: boolean;
  pid: number;
  log(line: string): void;
  onRss(mb: number): void;
  rssMb(pid: number): number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

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
  await new Promise<void>((r) => receiver.listen(input.receiverPort, '127.0.0.1', r));
  const hook = await api(serviceBase, 'POST', '/v1/rest/bench/integration', token, {
    org_id: org,
    active: true,
    type: 'WEBHOOK',
    data: { endpoint: `http://127.0.0.1:${input.receiverPort}/hook`, do_events: true, do_contacts: false, httpTimeout: '10' },
  });
  const integrationId = hook.integration.id as number;

  // 1. throughput: a committed backlog, drained
  const backlog = input.quick ? 10_000 : 50_000;
  const info = JSON.parse(fs.readFileSync(path.join(input.dataDir, 'postgres.json'), 'utf8')) as {
    host: string;
    port: number;
    user: string;
    password: string;
  };
  const db = new pg.Client({ host: info.host, port: info.port, user: info.user, password: info.password, database: 'trackway' });
  await db.connect();
  const day = new Date().toISOString().slice(0, 10);
  received = 0;
  const sampler = setInterval(() => input.onRss(input.rssMb(input.pid)), 250);
  await db.query('BEGIN');
  await db.query(
    `INSERT INTO deliveries (org_id, integration_id, kind, body, next_attempt_at)
     SELECT $1::bigint, $2::bigint, 'event', json_build_object('medium', 'event', 'contact', 'backlog-' || n || '@bench.example',
       'type', 'EMAIL', 'date', $3::text, 'org_id', $1::bigint::text, 'event', 'view')::text, now()
     FROM generate_series(1, $4) AS n`,
    [org, integrationId, day, backlog],
  );
  await db.query(`SELECT pg_notify('trackway_deliveries', '')`);
  await db.query('COMMIT');
  const committed = performance.now();
  while (received < backlog && performance.now() - committed < 120_000) await new Promise((r) => setTimeout(r, 20));
  const drainSeconds = (lastArrival - committed) / 1000;
  const drained = received;
  const throughput = Math.round(drained / drainSeconds);
  log(`   backlog of ${backlog}: ${drained} delivered in ${drainSeconds.toFixed(2)} s → ${throughput} deliveries/s`);

  // 2. latency under a steady event rate
  const rate = input.quick ? 300 : 500;
  const seconds = input.quick ? 5 : 10;
  const n = rate * seconds;
  const run = Date.now().toString(36);
  const visitors = Array.from({ length: n }, (_, i) => ({ core: `lat${run}-${i}`, email: `lat${run}-${i}@bench.example` }));
  // identify everyone first (do_contacts is off: no deliveries)
  for (let i = 0; i < visitors.length; i += 64) {
    await Promise.all(
      visitors.slice(i, i + 64).map(async (v) => {
        const payload = Buffer.from(JSON.stringify({ email: v.email })).toString('base64url');
        const r = await fetch(`${serviceBase}/jsv1/identify/${org}/r${run}/${v.core}/${payload}`);
        await r.arrayBuffer();
      }),
    );
  }
  arrivals.clear();
  const acked = new Map<string, number>();
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const v = visitors[i]!;
    inFlight.push(
      fetch(`${serviceBase}/jsv1/${org}/r${run}/${v.core}/null/event/view`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ page: 'https://bench-shop.example/' }),
      }).then(async (r) => {
        await r.arrayBuffer();
        if (r.status === 202) acked.set(v.email, performance.now());
      }),
    );
  }
  await Promise.all(inFlight);
  const until = performance.now() + 30_000;
  while (arrivals.size < acked.size && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
  clearInterval(sampler);
  const lat = [...acked].filter(([c]) => arrivals.has(c)).map(([c, t]) => Math.max(0, arrivals.get(c)! - t)).sort((a, b) => a - b);
  log(`   steady ${rate} events/s for ${seconds} s: ${arrivals.size}/${acked.size} notified; commit → arrival p50 ${percentile(lat, 50).toFixed(1)} ms, p99 ${percentile(lat, 99).toFixed(1)} ms`);

  await db.end();
  await new Promise<void>((r) => {
    receiver.closeAllConnections();
    receiver.close(() => r());
  });
  return {
    backlog,
    backlog_delivered: drained,
    deliveries_per_second: throughput,
    latency_rate_per_second: rate,
    latency_events: acked.size,
    latency_notified: lat.length,
    commit_to_arrival_p50_ms: Number(percentile(lat, 50).toFixed(1)),
    commit_to_arrival_p99_ms: Number(percentile(lat, 99).toFixed(1)),
  };
}
