// `npm run bench:erase [-- options]`: erasing a person with 100,000 events
// while the shop keeps tracking (README "Privacy", BENCHMARKS.md "Erasure").
//
// The service runs as a child process on a fresh embedded PostgreSQL (as
// `npm run bench` starts it). One person is identified through the API, then
// given N events and N event-export deliveries naming their email (written
// with SQL: setting up is not what is measured) and catalogue entries for the
// products they viewed. A load of updatecart events from other visitors runs
// throughout (closed loop, C connections); after a window without erasure,
// the person is erased through the API. The bench prints the erasure's
// duration and the ingest latency (p50, p99, max) and throughput before and
// during it, and writes them as JSON to bench-results/.
//
// Options:
//   --events N        events (and deliveries) of the person (default 100000)
//   --connections C   concurrent tracking clients (default 16)
//   --before S        seconds of load before the erasure (default 10)
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { embeddedUrl } from './bench-database.ts';
import { ROOT, freePort, serviceCommand, startService, stopProcess } from './bench-servers.ts';

const { values: args } = parseArgs({
  options: { events: { type: 'string' }, connections: { type: 'string' }, before: { type: 'string' } },
});
const EVENTS = Number(args.events ?? 100_000);
const CONNECTIONS = Number(args.connections ?? 16);
const BEFORE_S = Number(args.before ?? 10);
for (const [k, v] of Object.entries({ events: EVENTS, connections: CONNECTIONS, before: BEFORE_S })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${k}: a whole number ≥ 1`);
}
const DOMAIN = 'erase-bench.example';
const log = (line: string) => process.stderr.write(line + '\n');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench reads the API's JSON answers untyped
async function json(method: string, url: string, body?: unknown, token?: string): Promise<any> {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${url} → ${r.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

interface Sample {
  /** when it was sent (ms, performance.now) */
  at: number;
  ms: number;
  ok: boolean;
}

/** Closed-loop tracking load: each connection sends its next updatecart as soon as the last one is answered. */
function startLoad(base: string, org: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const url = new URL(base);
  const samples: Sample[] = [];
  let running = true;
  let n = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const i = n++;
      const body = JSON.stringify({ product_id: i % 500, cart_url: `https://${DOMAIN}/cart` });
      const at = performance.now();
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: `/jsv1/${org}/r-load-${i % 1000}/c-load-${i % 1000}/null/event/updatecart`,
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-forwarded-for': `198.51.100.${i % 200}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            samples.push({ at, ms: performance.now() - at, ok: res.statusCode === 202 });
            resolve();
          });
        },
      );
      req.on('error', () => {
        samples.push({ at, ms: performance.now() - at, ok: false });
        resolve();
      });
      req.end(body);
    });
  const loops = Array.from({ length: CONNECTIONS }, async () => {
    while (running) await one();
  });
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

function summary(samples: Sample[], from: number, to: number) {
  const xs = samples.filter((s) => s.at >= from && s.at < to);
  const ms = xs.map((s) => s.ms).sort((a, b) => a - b);
  const q = (p: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]! : NaN);
  return {
    requests: xs.length,
    failed: xs.filter((s) => !s.ok).length,
    perSecond: Math.round(xs.length / ((to - from) / 1000)),
    p50: +q(0.5).toFixed(1),
    p99: +q(0.99).toFixed(1),
    max: +(ms[ms.length - 1] ?? NaN).toFixed(1),
  };
}

async function seed(databaseUrl: string, org: number, core: string, roaming: string, email: string, integration: number): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    await c.query(
      `INSERT INTO events (org_id, received_at, name, core_id, roaming_id, corex_id, body)
       SELECT $1::bigint, now() - g * interval '1 millisecond', 'productview', $2, $3, NULL,
              jsonb_build_object('product_id', g % 500, 'price', 10, 'product_url', 'https://${DOMAIN}/p/' || (g % 500))
       FROM generate_series(1, $4::int) g`,
      [org, core, roaming, EVENTS],
    );
    await c.query(
      `INSERT INTO products (org_id, product_id, url, seen_at)
       SELECT $1::bigint, g, 'https://${DOMAIN}/p/' || g, now() FROM generate_series(0, 499) g ON CONFLICT DO NOTHING`,
      [org],
    );
    await c.query(
      `INSERT INTO deliveries (org_id, integration_id, kind, contact, body, status, attempts_count, delivered_at)
       SELECT $1::bigint, $2, 'event', $3::text,
              jsonb_build_object('medium', 'event', 'contact', $3::text, 'type', 'EMAIL', 'date', '2026-11-26', 'org_id', $1::bigint::text,
                                 'event', 'view', 'event_id', g::text, 'visitor', jsonb_build_object('core_id', $4::text))::text,
              'delivered', 1, now()
       FROM generate_series(1, $5::int) g`,
      [org, integration, email, core, EVENTS],
    );
    await c.query('ANALYZE events; ANALYZE deliveries; ANALYZE products');
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-bench-erase-'));
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = await freePort();
  const cmd = serviceCommand({});
  log(`service: ${cmd.line}   [${cmd.how}]   data dir ${dataDir}`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL; // the embedded PostgreSQL of this run
  const service = await startService(
    cmd,
    {
      ...env,
      TRACKWAY_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      TRUST_PROXY: 'true',
      TRACKING_RATE_LIMIT: '1000000000/1s',
      TRACKWAY_BOOTSTRAP_PLATFORM: 'bench',
      TRACKWAY_BOOTSTRAP_EMAIL: 'bench@bench.example',
      TRACKWAY_BOOTSTRAP_PASSWORD: 'bench-password-1',
    },
    port,
  );
  try {
    const base = service.base;
    const token = (await json('POST', `${base}/v1/rest/bench/users/login`, { email: 'bench@bench.example', password: 'bench-password-1' }))
      .bearer_token as string;
    const org = (await json('POST', `${base}/v1/rest/bench/users/register`, { email: 'shop@bench.example', domain: DOMAIN }, token)).organisation
      .id as number;
    const hook = (
      await json(
        'POST',
        `${base}/v1/rest/bench/integration`,
        {
          org_id: org,
          active: true,
          type: 'WEBHOOK',
          data: { endpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, do_events: false, do_contacts: true },
        },
        token,
      )
    ).integration.id as number;
    const email = 'erase-me@bench.example';
    const payload = Buffer.from(JSON.stringify({ email, name: 'Erase Me' })).toString('base64url');
    await json('GET', `${base}/jsv1/identify/${org}/r-victim/c-victim/${payload}`);
    log(`seeding ${EVENTS} events and ${EVENTS} deliveries of one person ...`);
    const seededAt = performance.now();
    await seed(embeddedUrl(dataDir), org, 'c-victim', 'r-victim', email, hook);
    log(`   seeded in ${((performance.now() - seededAt) / 1000).toFixed(1)} s`);

    const load = startLoad(base, org);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, BEFORE_S * 1000));
    const t1 = performance.now();
    const made = await json('POST', `${base}/v1/rest/bench/organisations/${org}/privacy-requests`, { type: 'erase', subject: { email } }, token);
    let done;
    for (;;) {
      done = await json('GET', `${base}/v1/rest/bench/organisations/${org}/privacy-requests/${made.id}`, undefined, token);
      if (done.status === 'done' || done.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const t2 = performance.now();
    await load.stop();
    if (done.status !== 'done') throw new Error(`the erasure failed: ${done.error}`);
    const result = {
      measured: new Date().toISOString(),
      machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
      service: cmd.line,
      events: EVENTS,
      connections: CONNECTIONS,
      counts: done.counts,
      erase: {
        wallSeconds: +((t2 - t1) / 1000).toFixed(2),
        runSeconds: +((Date.parse(done.finished_at) - Date.parse(done.started_at)) / 1000).toFixed(2),
      },
      ingestBefore: summary(load.samples, t0 + 1000, t1),
      ingestDuring: summary(load.samples, t1, t2),
    };
    fs.mkdirSync(path.join(ROOT, 'bench-results'), { recursive: true });
    const file = path.join(ROOT, 'bench-results', `erase-${Date.now()}.json`);
    fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
    const row = (name: string, s: ReturnType<typeof summary>) =>
      `${name.padEnd(16)} ${String(s.perSecond).padStart(7)} req/s   p50 ${String(s.p50).padStart(6)} ms   p99 ${String(s.p99).padStart(7)} ms   max ${String(s.max).padStart(7)} ms   (${s.requests} requests, ${s.failed} failed)`;
    process.stdout.write(
      [
        `erasure of one person: ${JSON.stringify(done.counts)}`,
        `   ${result.erase.runSeconds} s from claim to done (${result.erase.wallSeconds} s from the request to the answer saying done)`,
        `ingest (updatecart, ${CONNECTIONS} connections, closed loop):`,
        `   ${row('before the erase', result.ingestBefore)}`,
        `   ${row('during the erase', result.ingestDuring)}`,
        `machine: ${result.machine}`,
        `written to ${path.relative(ROOT, file)}`,
        '',
      ].join('\n'),
    );
  } finally {
    await stopProcess(service.child);
    receiver.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench-erase: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
