// `npm run bench [-- options]`: Trackway against the limits of this machine,
// measured in one run (DESIGN.md §5, BENCHMARKS.md "Method").
//
// Three servers, each a child process on 127.0.0.1, on the same PostgreSQL:
//   service  `trackway serve` (serviceCommand() in bench-servers.ts decides how)
//   limit    the durable limit: node:http, JSON parsed, group commit of one
//            row per request into one table, 202 after COMMIT
//            (scripts/bench-limit-server.ts)
//   bare     node:http answering 204, no work
// Per scenario: a warm-up of each, then rounds alternating bare → limit →
// service (autocannon, same duration and connections), medians, ratios (also
// per round), p50/p99, and CPU per request of each server's Node processes
// and of PostgreSQL (/proc deltas over each round). Then the dispatcher
// against a raw got loop, commit → arrival latency, and the service's peak RSS.
// Prints one table, writes every round as JSON to bench-results/.
//
// Options:
//   --quick                   3 rounds of 3 s, smaller dispatch backlog
//   --only a,b                scenarios: view, updatecart (or ingest), view-returning,
//                             updatecart-returning, identify, read, dispatch
//   --rounds N  --duration S  --connections N   (defaults 5 / 10 s / 64)
//   --database-url URL        run on that PostgreSQL (also DATABASE_URL): a scratch
//                             database is created there and dropped afterwards
//   --service-cmd "CMD"       how to start the service (default: dist/ build if any, else tsx)
//   --workers N               appended to the service command as `--workers N`
//   --dispatch-concurrency N  got loop in-flight requests (default: the dispatcher's per-endpoint default)
//   --got-mode prepared|plain how the got loop drives got (default prepared, as the sender does)
//   --limit-in-flight N  --limit-batch N   the limit server's group commit (defaults 2 / 256, as ingest)
//   --cpu-prof                V8 CPU profiles of the service into bench-results/
//   --preload N               updatecart and read measured before and after writing N events
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type DispatchResult, benchDispatch, dispatcherConcurrency } from './bench-dispatch.ts';
import { LIMIT_TABLE, type ScratchDatabase, createLimitTable, createScratchDatabase, embeddedUrl, inspectDatabase, redact } from './bench-database.ts';
import { RssPeak, notPostgres, processTree, treeRss } from './bench-proc.ts';
import { dispatchLines, perRoundLines, resultsTable, rssLine } from './bench-report.ts';
import { type RoundsConfig, type ScenarioResult, type ServiceWindow, compare, shoot } from './bench-rounds.ts';
import { ALIASES, DEFAULT_SCENARIOS, buildScenarios } from './bench-scenarios.ts';
import { ROOT, freePort, serviceCommand, startBare, startLimit, startService, stopProcess } from './bench-servers.ts';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    preload: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    'service-cmd': { type: 'string' },
    workers: { type: 'string' },
    'dispatch-concurrency': { type: 'string' },
    'got-mode': { type: 'string', default: 'prepared' },
    'limit-in-flight': { type: 'string', default: '2' },
    'limit-batch': { type: 'string', default: '256' },
  },
});

function whole(name: string, raw: string | undefined, def: number, min = 1): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: "${raw}" is not a whole number ≥ ${min}`);
  return n;
}

const QUICK = args.quick;
const ROUNDS = whole('rounds', args.rounds, QUICK ? 3 : 5);
if (ROUNDS < 3) throw new Error('--rounds: at least 3 (a median of fewer says little)');
const DURATION = whole('duration', args.duration, QUICK ? 3 : 10);
const CONNECTIONS = whole('connections', args.connections, 64);
const PRELOAD = whole('preload', args.preload, 0, 0);
const WORKERS = args.workers === undefined ? undefined : whole('workers', args.workers, 1);
const ONLY = new Set((args.only ?? DEFAULT_SCENARIOS.join(',')).split(',').map((s) => ALIASES[s.trim()] ?? s.trim()));
const GOT_MODE = args['got-mode'] === 'plain' ? 'plain' : 'prepared';
const DATABASE_URL = args['database-url'] ?? process.env.DATABASE_URL;
const STARTED = Date.now();

function log(line: string): void {
  process.stderr.write(line + '\n');
}

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

const children: ChildProcess[] = [];
let scratch: ScratchDatabase | undefined;
let dataDir: string | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    // the service first: it drains its ingest queue and stops the embedded PostgreSQL it started
    for (const c of [...children].reverse()) await stopProcess(c);
    if (scratch) await scratch.drop().catch((e: unknown) => log(`could not drop ${scratch!.name}: ${(e as Error).message}`));
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log(`\n${signal}: stopping the servers${scratch ? ` and dropping ${scratch.name}` : ''}`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function main(): Promise<string> {
  const known = new Set([...DEFAULT_SCENARIOS, 'read']);
  for (const k of ONLY) if (!known.has(k)) throw new Error(`--only: unknown scenario "${k}" (known: ${[...known].join(', ')})`);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-bench-'));
  const resultsDir = path.join(ROOT, 'bench-results');
  fs.mkdirSync(resultsDir, { recursive: true });
  const [servicePort, barePort, limitPort, receiverPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);

  if (DATABASE_URL) {
    scratch = await createScratchDatabase(DATABASE_URL);
    log(`scratch database ${scratch.name} on ${redact(DATABASE_URL)}`);
  }
  const serviceEnv: NodeJS.ProcessEnv = {
    ...process.env,
    TRACKWAY_DATA_DIR: dataDir,
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // requests carry public client addresses in X-Forwarded-For, so every
    // event is geo-located as it would be behind a load balancer
    TRUST_PROXY: 'true',
    // the limiters run (their cost is measured) but never throttle the bench's 8 client addresses
    TRACKING_RATE_LIMIT: '1000000000/1s',
    TRACKING_IDENTIFY_RATE_LIMIT: '1000000000/1s',
    TRACKWAY_BOOTSTRAP_PLATFORM: 'bench',
    TRACKWAY_BOOTSTRAP_EMAIL: 'bench@bench.example',
    TRACKWAY_BOOTSTRAP_PASSWORD: 'bench-password-1',
  };
  if (scratch) serviceEnv.DATABASE_URL = scratch.url;
  else delete serviceEnv.DATABASE_URL;

  const cmd = serviceCommand({ cmd: args['service-cmd'], workers: WORKERS, cpuProfDir: args['cpu-prof'] ? resultsDir : undefined });
  log(`service: ${cmd.line}   [${cmd.how}]   data dir ${dataDir}`);
  const spawnedAt = performance.now();
  const service = await startService(cmd, serviceEnv, servicePort);
  children.push(service.child);
  const readyAfter = (performance.now() - spawnedAt) / 1000;

  const databaseUrl = scratch ? scratch.url : embeddedUrl(dataDir);
  const db = await inspectDatabase(databaseUrl, scratch ? 'external' : 'embedded');
  log(
    `database: ${db.kind} PostgreSQL ${db.version} at ${db.where} (fsync ${db.settings.fsync}, synchronous_commit ${db.settings.synchronous_commit}); ` +
      `PostgreSQL CPU counts ${db.cpuScope}`,
  );
  await createLimitTable(databaseUrl);
  const limit = await startLimit(limitPort, {
    databaseUrl,
    table: LIMIT_TABLE,
    maxBatch: whole('limit-batch', args['limit-batch'], 256),
    inFlight: whole('limit-in-flight', args['limit-in-flight'], 2),
  });
  children.push(limit.child);
  const bare = await startBare(barePort);
  children.push(bare.child);

  const login = await json('POST', `${service.base}/v1/rest/bench/users/login`, { email: 'bench@bench.example', password: 'bench-password-1' });
  const token = login.bearer_token as string;
  const reg = await json('POST', `${service.base}/v1/rest/bench/users/register`, { email: 'shop@bench.example', domain: 'bench-shop.example' }, token);
  const org = reg.organisation.id as number;

  const idle = treeRss(service.pid, notPostgres);
  const serviceProcesses = processTree(service.pid, notPostgres).map((p) => `${p.pid} ${p.comm}`);
  log(`service processes: ${serviceProcesses.join(', ')}; idle RSS ${Math.round(idle.sumMb)} MB`);
  const serviceRss = new RssPeak(service.pid, notPostgres);
  const serviceWindows: ServiceWindow[] = [];
  const cfg: RoundsConfig = {
    connections: CONNECTIONS,
    duration: DURATION,
    rounds: ROUNDS,
    warmup: { references: QUICK ? 2 : 3, service: QUICK ? 2 : 5 },
    postmasterPid: db.postmasterPid,
    log,
    serviceRss,
    serviceWindows,
  };
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const scenarios = buildScenarios({
    org,
    token,
    run,
    send: async (server, make, amount) => {
      const s = await shoot(server, make, 0, cfg, { amount });
      if (s.non2xx || s.errors || s.completed < amount) {
        throw new Error(`preparing: ${s.completed}/${amount} requests completed, ${s.non2xx} non-2xx, ${s.errors} errors`);
      }
      log(`   ${s.completed} requests, all 2xx`);
    },
  });
  const servers = { bare, limit, service };

  const results: ScenarioResult[] = [];
  if (PRELOAD > 0) {
    const { preloadEvents } = await import('./bench-preload.ts');
    const pair = [scenarios.get('updatecart')!, scenarios.get('read')!];
    const before: ScenarioResult[] = [];
    for (const sc of pair) before.push(await compare(servers, sc, cfg));
    log(`\n== preloading ${PRELOAD} events`);
    await preloadEvents(databaseUrl, org, PRELOAD, log);
    for (let i = 0; i < pair.length; i++) {
      const after = await compare(servers, pair[i]!, cfg);
      results.push({ ...before[i]!, stored_events: 'before preload' }, { ...after, stored_events: `after ${PRELOAD}` });
    }
  } else {
    for (const [key, sc] of scenarios) if (ONLY.has(key)) results.push(await compare(servers, sc, cfg));
  }

  let dispatch: DispatchResult | undefined;
  const found = dispatcherConcurrency();
  const concurrency = whole('dispatch-concurrency', args['dispatch-concurrency'], found ?? 8);
  if (ONLY.has('dispatch') && PRELOAD === 0) {
    const from = args['dispatch-concurrency'] ? '--dispatch-concurrency' : found ? 'the dispatcher’s per-endpoint default' : 'a guess: the dispatcher’s default was not found';
    log(`\n== dispatch (local keep-alive receiver; got loop at ${concurrency} in flight, from ${from})`);
    dispatch = await benchDispatch({
      serviceBase: service.base,
      servicePid: service.pid,
      postmasterPid: db.postmasterPid,
      databaseUrl,
      token,
      org,
      receiverPort,
      quick: QUICK,
      rounds: ROUNDS,
      concurrency,
      gotMode: GOT_MODE,
      serviceRss,
      serviceWindows,
      log,
    });
  }

  const metrics = await (await fetch(`${service.base}/metrics`)).text();
  const pick = (name: string) => metrics.split('\n').filter((l) => l.startsWith(name) && !l.includes('bucket')).join('; ');
  const limitStats = (await (await fetch(`${limit.base}/stats`)).json()) as { batches: number; rows: number };
  const rss = { idle_sum_mb: Math.round(idle.sumMb), peak_sum_mb: Math.round(serviceRss.sumMb), peak_largest_process_mb: Math.round(serviceRss.maxMb), processes: serviceRss.processes };

  const summary = {
    when: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memory_gb: Math.round(os.totalmem() / 2 ** 30), node: process.version, loadavg_at_end: os.loadavg() },
    database: db,
    service: { command: cmd.line, how: cmd.how, processes_at_start: serviceProcesses, ready_after_s: Number(readyAfter.toFixed(1)) },
    method: {
      connections: CONNECTIONS,
      duration_s: DURATION,
      rounds: ROUNDS,
      quick: QUICK,
      preload_events: PRELOAD,
      order: 'warm-up of each, then rounds bare → limit → service',
      limit_group_commit: { max_batch: whole('limit-batch', args['limit-batch'], 256), in_flight: whole('limit-in-flight', args['limit-in-flight'], 2) },
      tracking_rate_limit: serviceEnv.TRACKING_RATE_LIMIT,
    },
    results,
    dispatch,
    service_rss: rss,
    /** when each measured service round ran, on the clock of V8's CPU profiles (scripts/profile-summary.ts --bench) */
    service_windows: serviceWindows,
    limit_batches: { ...limitStats, rows_per_batch: limitStats.batches ? Number((limitStats.rows / limitStats.batches).toFixed(1)) : 0 },
    service_ingest_metrics: { batch_size: pick('trackway_ingest_batch_size'), commit_seconds: pick('trackway_ingest_commit_seconds') },
  };
  const file = path.join(resultsDir, `bench-${summary.when.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(summary, null, 2) + '\n');

  log(`\ningest batches (service): ${summary.service_ingest_metrics.batch_size}`);
  log(`ingest commits (service): ${summary.service_ingest_metrics.commit_seconds}`);
  log(`limit server: ${limitStats.rows} rows in ${limitStats.batches} transactions (${summary.limit_batches.rows_per_batch} per batch)`);
  const out: string[] = [
    '',
    `== summary: ${ROUNDS} rounds × ${DURATION} s at ${CONNECTIONS} connections, rounds alternating bare → limit → service`,
    `service: ${cmd.line} [${cmd.how}]`,
    `database: ${db.kind} PostgreSQL ${db.version} at ${db.where}, fsync ${db.settings.fsync}, synchronous_commit ${db.settings.synchronous_commit}; PostgreSQL CPU = ${db.cpuScope}`,
    '',
    ...resultsTable(results),
    '',
    'per round:',
    ...perRoundLines(results).map((l) => '  ' + l),
    '',
    ...(dispatch ? dispatchLines(dispatch) : []),
    rssLine(rss),
    `written to ${path.relative(ROOT, file)}`,
  ];
  process.stdout.write(out.join('\n') + '\n');
  return file;
}

/** The service writes its profiles as it exits: list them once it has. */
function profilesNote(resultsFile: string): void {
  const dir = path.dirname(resultsFile);
  const made = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile') && fs.statSync(path.join(dir, f)).mtimeMs >= STARTED)
    .map((f) => path.relative(ROOT, path.join(dir, f)));
  process.stdout.write(
    made.length
      ? `CPU profiles of the service (one per thread and process): ${made.join(' ')}\n` +
          `summary of the measured service rounds only: npx tsx scripts/profile-summary.ts --bench ${path.relative(ROOT, resultsFile)} [--scenario view] ${made.join(' ')}\n`
      : 'no CPU profile was written (did the service exit cleanly?)\n',
  );
}

main()
  .then(
    async (file) => {
      await cleanup();
      if (args['cpu-prof']) profilesNote(file);
    },
    async (err: unknown) => {
      console.error(err);
      await cleanup();
      process.exitCode = 1;
    },
  )
  .finally(() => process.exit());
