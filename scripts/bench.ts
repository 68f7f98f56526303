// `npm run bench [-- --quick] [-- --only ingest,identify,dispatch] [-- --preload N]`
//
// Measures Trackway against the limit of this machine: a bare node:http server
// answering 204 to the same requests, started in the same run. Both run as
// child processes; autocannon (64 connections) drives them alternately —
// bare, service, bare, service … — for at least 3 rounds after a warm-up, and
// the medians and service/bare ratios are printed and written as JSON.
// Dispatch is measured separately: deliveries/s draining a backlog to a local
// keep-alive receiver, and event commit → arrival latency under steady load.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    preload: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const QUICK = args.quick!;
const ROUNDS = Number(args.rounds ?? (QUICK ? 3 : 5));
const DURATION = QUICK ? 3 : 10;
const CONNECTIONS = 64;
const ONLY = new Set((args.only ?? 'ingest,identify,dispatch').split(','));
const PRELOAD = Number(args.preload ?? 0);

function log(line: string): void {
  process.stderr.write(line + '\n');
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

const BARE_SERVER = `
const http = require('node:http');
http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => { res.statusCode = 204; res.end(); });
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

interface Target {
  name: string;
  base: string;
  pid: number;
}

interface Shot {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

type RequestFactory = () => { method: 'GET' | 'POST'; path: string; body?: string; headers?: Record<string, string> };

async function shoot(target: Target, make: RequestFactory, seconds: number, onRss: (mb: number) => void): Promise<Shot> {
  const sampler = setInterval(() => onRss(rssMb(target.pid)), 250);
  const result = await autocannon({
    url: target.base,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          const r = make();
          return { ...req, method: r.method, path: r.path, body: r.body, headers: { ...req.headers, ...r.headers } };
        },
      },
    ],
  });
  clearInterval(sampler);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

interface Scenario {
  name: string;
  make: RequestFactory;
}

async function compare(bare: Target, service: Target, sc: Scenario, rss: { max: number }) {
  log(`\n== ${sc.name}: warm-up`);
  await shoot(bare, sc.make, 2, () => {});
  await shoot(service, sc.make, QUICK ? 2 : 4, () => {});
  const rounds: { bare: Shot; service: Shot }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const b = await shoot(bare, sc.make, DURATION, () => {});
    const s = await shoot(service, sc.make, DURATION, (mb) => (rss.max = Math.max(rss.max, mb)));
    rounds.push({ bare: b, service: s });
    log(
      `   round ${i + 1}: bare ${b.rps.toFixed(0)} req/s, service ${s.rps.toFixed(0)} req/s ` +
        `(p50 ${s.p50} ms, p99 ${s.p99} ms, non-2xx ${s.non2xx}, errors ${s.errors}) ratio ${(s.rps / b.rps).toFixed(2)}`,
    );
  }
  const bareRps = median(rounds.map((r) => r.bare.rps));
  const serviceRps = median(rounds.map((r) => r.service.rps));
  return {
    scenario: sc.name,
    bare_rps: Math.round(bareRps),
    service_rps: Math.round(serviceRps),
    ratio: Number((serviceRps / bareRps).toFixed(3)),
    ratio_per_round: rounds.map((r) => Number((r.service.rps / r.bare.rps).toFixed(3))),
    service_p50_ms: median(rounds.map((r) => r.service.p50)),
    service_p99_ms: median(rounds.map((r) => r.service.p99)),
    service_non2xx: rounds.reduce((n, r) => n + r.service.non2xx, 0),
    service_errors: rounds.reduce((n, r) => n + r.service.errors, 0),
  };
}

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

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-bench-'));
  const [servicePort, barePort, receiverPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const children: ChildProcess[] = [];
  const cleanup = () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  };
  process.on('exit', cleanup);

  log(`data dir ${dataDir}`);
  const serviceEnv = {
    ...process.env,
    TRACKWAY_DATA_DIR: dataDir,
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // requests carry public client addresses in X-Forwarded-For, so every
    // event is geo-located as it would be behind a load balancer
    TRUST_PROXY: 'true',
    // a benchmark measures throughput: the tracking limits (on by default) would cap it
    TRACKING_RATE_LIMIT: 'off',
    TRACKWAY_BOOTSTRAP_PLATFORM: 'bench',
    TRACKWAY_BOOTSTRAP_EMAIL: 'bench@bench.example',
    TRACKWAY_BOOTSTRAP_PASSWORD: 'bench-password-1',
  };
  delete (serviceEnv as Record<string, string | undefined>).DATABASE_URL;
  const nodeArgs = ['--import', 'tsx'];
  if (args['cpu-prof']) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, 'bench-results')}`);
  const service = spawn(process.execPath, [...nodeArgs, 'src/main.ts', 'serve'], { cwd: ROOT, env: serviceEnv, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(service);
  const bareProc = spawn(process.execPath, ['-e', BARE_SERVER], { env: { PORT: String(barePort) }, stdio: 'inherit' });
  children.push(bareProc);
  const serviceBase = `http://127.0.0.1:${servicePort}`;
  const bareBase = `http://127.0.0.1:${barePort}`;
  await waitFor(`${serviceBase}/readyz`, service);
  await waitFor(bareBase, bareProc);

  const login = await json('POST', `${serviceBase}/v1/rest/bench/users/login`, { email: 'bench@bench.example', password: 'bench-password-1' });
  const token = login.bearer_token as string;
  const reg = await json('POST', `${serviceBase}/v1/rest/bench/users/register`, { email: 'shop@bench.example', domain: 'bench-shop.example' }, token);
  const org = reg.organisation.id as number;

  const results: Record<string, unknown>[] = [];
  const rss = { max: rssMb(service.pid!) };
  const bare: Target = { name: 'bare', base: bareBase, pid: bareProc.pid! };
  const svc: Target = { name: 'service', base: serviceBase, pid: service.pid! };


  let seq = 0;
  // public addresses in several countries (IPv4 and IPv6)
  const clients = ['193.0.6.139', '8.8.4.4', '2001:200::1', '81.2.69.160', '203.0.113.0', '1.1.1.1', '2a00:1450:4001::1', '200.160.2.3'];
  const xff = () => clients[seq % clients.length]!;
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const ingestBody = JSON.stringify({
    cart_url: 'https://bench-shop.example/cart',
    product_id: 1234,
    line_items: [{ quantity: 1, title: 'Linen shirt', line_price: 49.5, id: 'li-1', product_id: 1234, image_url: 'https://cdn.bench-shop.example/1234.jpg' }],
    cart_value: 49.5,
  });
  const ingest: Scenario = {
    name: 'ingest (POST event/updatecart, distinct visitors)',
    make: () => ({
      method: 'POST',
      path: `/jsv1/${org}/r${run}/c${run}-${++seq}/null/event/updatecart`,
      body: ingestBody,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': xff() },
    }),
  };
  const firstPage: Scenario = {
    name: 'read API first page (GET organisations/{id}/events?limit=50)',
    make: () => ({ method: 'GET', path: `/v1/rest/bench/organisations/${org}/events?limit=50`, headers: { authorization: `Bearer ${token}` } }),
  };
  if (PRELOAD > 0) {
    const { preloadEvents } = await import('./bench-preload.ts');
    const before = [await compare(bare, svc, ingest, rss), await compare(bare, svc, firstPage, rss)];
    log(`\n== preloading ${PRELOAD} events`);
    await preloadEvents(dataDir, org, PRELOAD, log);
    const after = [await compare(bare, svc, ingest, rss), await compare(bare, svc, firstPage, rss)];
    for (let i = 0; i < before.length; i++) {
      results.push({ ...before[i]!, stored_events: 'before preload' }, { ...after[i]!, stored_events: `after ${PRELOAD}` });
    }
  } else if (ONLY.has('ingest')) {
    results.push(await compare(bare, svc, ingest, rss));
  }
  if (ONLY.has('read') && PRELOAD === 0) results.push(await compare(bare, svc, firstPage, rss));
  if (ONLY.has('identify')) {
    results.push(
      await compare(bare, svc, {
        name: 'identify (GET identify, distinct visitors and emails)',
        make: () => {
          const n = ++seq;
          const payload = Buffer.from(JSON.stringify({ email: `v${n}-${run}@bench.example`, name: 'Bench Visitor' })).toString('base64url');
          return { method: 'GET', path: `/jsv1/identify/${org}/r${run}/i${run}-${n}/${payload}`, headers: { 'x-forwarded-for': xff() } };
        },
      }, rss),
    );
  }
  let dispatch: Record<string, unknown> | undefined;
  if (ONLY.has('dispatch')) {
    log('\n== dispatch (local keep-alive receiver)');
    const { benchDispatch } = await import('./bench-dispatch.ts');
    dispatch = await benchDispatch({
      serviceBase,
      dataDir,
      token,
      org,
      receiverPort,
      quick: QUICK,
      pid: service.pid!,
      log,
      rssMb,
      onRss: (mb) => (rss.max = Math.max(rss.max, mb)),
    });
  }

  const summary = {
    when: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memory_gb: Math.round(os.totalmem() / 2 ** 30), node: process.version },
    method: { connections: CONNECTIONS, duration_s: DURATION, rounds: ROUNDS, quick: QUICK, preload_events: PRELOAD },
    results,
    dispatch,
    service_max_rss_mb: Math.round(rss.max),
  };
  fs.mkdirSync(path.join(ROOT, 'bench-results'), { recursive: true });
  const file = path.join(ROOT, 'bench-results', `bench-${summary.when.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(summary, null, 2) + '\n');

  const metrics = await (await fetch(`${serviceBase}/metrics`)).text();
  const pick = (name: string) => metrics.split('\n').filter((l) => l.startsWith(name) && !l.includes('bucket')).join('; ');
  log(`\ningest batches: ${pick('trackway_ingest_batch_size')}`);
  log(`ingest commits: ${pick('trackway_ingest_commit_seconds')}`);
  log('\n== summary');
  for (const r of results as { scenario: string; bare_rps: number; service_rps: number; ratio: number; service_p99_ms: number; stored_events?: string }[]) {
    const when = r.stored_events ? ` [${r.stored_events}]` : '';
    log(`${r.scenario}${when}: service ${r.service_rps} req/s vs bare ${r.bare_rps} req/s → ${r.ratio}× (p99 ${r.service_p99_ms} ms)`);
  }
  if (dispatch) log(`dispatch: ${JSON.stringify(dispatch)}`);
  log(`service max RSS: ${Math.round(rss.max)} MB`);
  log(`written to ${path.relative(ROOT, file)}`);

  service.kill('SIGTERM');
  await new Promise((r) => service.once('exit', r));
  bareProc.kill('SIGTERM');
  fs.rmSync(dataDir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
