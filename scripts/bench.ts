// `npm run bench [-- options]`: Trackway against the limits of this machine,
// measured in one run (docs/design.md "Quality bars", BENCHMARKS.md "Method").
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
// After each ingest scenario, WAL bytes per request (service and limit).
// Before each scenario but the first, the database is settled (VACUUM
// (ANALYZE), CHECKPOINT: settleDatabase), so none pays for the last one's writes.
// `rates`: page views sent open loop at fixed shares of the limit's rate, the
// limit and the service in turn: p99 at a given load (scripts/bench-rates.ts).
// `mixed`: a shop's traffic with exported events and identifies, unthrottled
// and at a share of its own maximum, with commit → arrival of the exports
// (scripts/bench-mixed.ts). `--stored N`: a second service on a database
// holding N events, in the same rounds (scripts/bench-stored.ts).
// Prints one table, writes every round as JSON to bench-results/.
//
// Options:
//   --quick                   3 rounds of 3 s, smaller dispatch backlog
//   --only a,b                scenarios: view, updatecart (or ingest), view-returning,
//                             updatecart-returning, identify, rates, mixed, read, dispatch
//   --rounds N  --duration S  --connections N   (defaults 5 / 10 s / 64)
//   --database-url URL        run on that PostgreSQL (also DATABASE_URL): a scratch
//                             database is created there and dropped afterwards
//   --as-is                   with --database-url: run on the database the URL names as it
//                             is, nothing created or dropped (a Citus database prepared with
//                             `trackway migrate --distribute`, docs/scaling.md)
//   --service-cmd "CMD"       how to start the service (default: dist/ build if any, else tsx)
//   --workers N               appended to the service command as `--workers N`
//   --dispatch-concurrency N  the dispatcher's WEBHOOK_CONCURRENCY and the got loop's in-flight requests
//                             (default: WEBHOOK_CONCURRENCY if set, else the dispatcher's default)
//   --got-mode prepared|plain how the got loop drives got (default prepared, as the sender does)
//   --limit-in-flight N  --limit-batch N   the limit server's group commit (defaults 2 / 256, as ingest)
//   --cpu-prof                V8 CPU profiles of the service into bench-results/
//   --stored N                a second service on a database with N stored events, rounds alternating
//                             with the empty one (default scenarios then: view, view-returning)
//   --stored-per-visitor E    stored events per stored visitor (default 5)
//   --wal-events N            requests per WAL measurement (default 10,000; 2,000 with --quick; 0: none)
//   --mixed-load P            the mixed scenario's rated phase, % of its own maximum (default 50)
//   --mixed-export P          % of its requests that are page views by contacts, exported (default 10)
//   --mixed-identify P        % that identify a new visitor (default 5)
//   --mixed-new P             % of the anonymous page views by a new visitor (default 50; the rest: 1,000 known ones)
//   --mixed-contacts N        visitors identified beforehand whose views are exported (default 1,000)
//   --rates P,Q               the rates scenario's open-loop rates, % of the limit's closed-loop
//                             rate on page views with a new visitor (default 10,25)
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchArgsError, parseBenchArgs } from './bench-args.ts';
import { type DispatchResult, benchDispatch, dispatcherConcurrency } from './bench-dispatch.ts';
import {
  LIMIT_TABLE,
  type ScratchDatabase,
  commitTimestampsOn,
  createLimitTable,
  createScratchDatabase,
  embeddedUrl,
  enableCommitTimestamps,
  inspectDatabase,
  redact,
  settleDatabase,
  withDatabase,
} from './bench-database.ts';
import { type MixedResult, benchMixed } from './bench-mixed.ts';
import { type RatesResult, benchRates } from './bench-rates.ts';
import { RssPeak, notPostgres, processTree, treeRss } from './bench-proc.ts';
import { dispatchLines, perRoundLines, resultsTable, rssLine } from './bench-report.ts';
import { mixedLines, profilesNote, ratesLines, storedLines, walLines } from './bench-report-extra.ts';
import { type RoundsConfig, type ScenarioResult, type ServiceWindow, compare, shoot } from './bench-rounds.ts';
import { buildScenarios } from './bench-scenarios.ts';
import {
  type Server,
  ROOT,
  freePort,
  json,
  organisation,
  serviceCommand,
  serviceEnvironment,
  startBare,
  startLimit,
  startService,
  stopProcess,
} from './bench-servers.ts';
import { type StoredResult, benchStored } from './bench-stored.ts';
import { type WalProbe, type WalShot, openWalProbe, scenarioWal } from './bench-wal.ts';

let opts: ReturnType<typeof parseBenchArgs>;
try {
  opts = parseBenchArgs(process.argv.slice(2), process.env);
} catch (e) {
  if (!(e instanceof BenchArgsError)) throw e;
  process.stderr.write(`npm run bench: ${e.message}\n`);
  process.exit(2);
}
const ONLY = opts.scenarios;
const STARTED = Date.now();

function log(line: string): void {
  process.stderr.write(line + '\n');
}

const children: ChildProcess[] = [];
/** databases this run created on an external server, dropped at the end */
const scratches: ScratchDatabase[] = [];
const dataDirs: string[] = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    // the services first (the first one started stops the embedded PostgreSQL), last started first
    for (const c of [...children].reverse()) await stopProcess(c);
    for (const s of scratches) await s.drop().catch((e: unknown) => log(`could not drop ${s.name}: ${(e as Error).message}`));
    for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log(`\n${signal}: stopping the servers${scratches.length ? ` and dropping ${scratches.map((s) => s.name).join(', ')}` : ''}`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function main(): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-bench-'));
  dataDirs.push(dataDir);
  const resultsDir = path.join(ROOT, 'bench-results');
  fs.mkdirSync(resultsDir, { recursive: true });
  const [servicePort, barePort, limitPort, receiverPort, mixedPort, storedPort] = (await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  )) as [number, number, number, number, number, number];
  const DATABASE_URL = opts.databaseUrl;
  let scratch: ScratchDatabase | undefined;
  if (DATABASE_URL && opts.asIs) {
    scratch = { url: DATABASE_URL, name: new URL(DATABASE_URL).pathname.slice(1), drop: async () => {} };
    log(`database ${redact(DATABASE_URL)} as it is (--as-is)`);
  } else if (DATABASE_URL) {
    scratch = await createScratchDatabase(DATABASE_URL);
    scratches.push(scratch);
    log(`scratch database ${scratch.name} on ${redact(DATABASE_URL)}`);
  }
  const serviceEnv = serviceEnvironment({ dataDir, port: servicePort, databaseUrl: scratch?.url, dispatchConcurrency: opts.dispatchConcurrency });

  const cmd = serviceCommand({ cmd: opts.serviceCmd, workers: opts.workers, cpuProfDir: opts.cpuProf ? resultsDir : undefined });
  log(`service: ${cmd.line}   [${cmd.how}]   data dir ${dataDir}`);
  let spawnedAt = performance.now();
  let service = await startService(cmd, serviceEnv, servicePort);
  children.push(service.child);
  let dbUrl = scratch ? scratch.url : embeddedUrl(dataDir);

  // the mixed scenario's exact commit → arrival needs commit timestamps: on for our own embedded cluster (a restart)
  let commitTimestamps = await commitTimestampsOn(dbUrl);
  if (ONLY.has('mixed') && !commitTimestamps && !scratch) {
    log('track_commit_timestamp = on for the embedded PostgreSQL (the mixed scenario’s commit → arrival): restarting the service');
    await enableCommitTimestamps(dbUrl);
    await stopProcess(service.child);
    children.pop();
    spawnedAt = performance.now();
    service = await startService(cmd, serviceEnv, servicePort);
    children.push(service.child);
    commitTimestamps = await commitTimestampsOn(embeddedUrl(dataDir)); // the port may have moved
  }
  const readyAfter = (performance.now() - spawnedAt) / 1000;

  if (!scratch) dbUrl = embeddedUrl(dataDir);
  const db = await inspectDatabase(dbUrl, scratch ? 'external' : 'embedded');
  log(
    `database: ${db.kind} PostgreSQL ${db.version} at ${db.where} (fsync ${db.settings.fsync}, synchronous_commit ${db.settings.synchronous_commit}, ` +
      `track_commit_timestamp ${db.settings.track_commit_timestamp}); PostgreSQL CPU counts ${db.cpuScope}`,
  );
  await createLimitTable(dbUrl);
  const limit = await startLimit(limitPort, { databaseUrl: dbUrl, table: LIMIT_TABLE, maxBatch: opts.limitBatch, inFlight: opts.limitInFlight });
  children.push(limit.child);
  const bare = await startBare(barePort);
  children.push(bare.child);

  const { org, token } = await organisation(service.base, 'shop@bench.example', 'bench-shop.example');

  const idle = treeRss(service.pid, notPostgres);
  const serviceProcesses = processTree(service.pid, notPostgres).map((p) => `${p.pid} ${p.comm}`);
  log(`service processes: ${serviceProcesses.join(', ')}; idle RSS ${Math.round(idle.sumMb)} MB`);
  const serviceRss = new RssPeak(service.pid, notPostgres);
  const serviceWindows: ServiceWindow[] = [];
  const cfg: RoundsConfig = {
    connections: opts.connections,
    duration: opts.duration,
    rounds: opts.rounds,
    warmup: { references: opts.quick ? 2 : 3, service: opts.quick ? 2 : 5 },
    postmasterPid: db.postmasterPid,
    log,
    serviceRss,
    serviceWindows,
  };
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const send = async (server: Server, make: Parameters<typeof shoot>[1], amount: number) => {
    const s = await shoot(server, make, 0, cfg, { amount });
    if (s.non2xx || s.errors || s.completed < amount) {
      throw new Error(`preparing: ${s.completed}/${amount} requests completed, ${s.non2xx} non-2xx, ${s.errors} errors`);
    }
    log(`   ${s.completed} requests, all 2xx`);
  };
  const scenarios = buildScenarios({ org, token, run, send });
  const servers = { bare, limit, service };
  const wal: WalProbe | undefined = opts.walEvents > 0 ? await openWalProbe(dbUrl) : undefined;
  if (wal && wal.breakdown !== true) log(`WAL: totals only, ${wal.breakdown}`);
  const walShots: WalShot[] = [];

  const results: ScenarioResult[] = [];
  /** each scenario after the first starts on a settled database (settleDatabase) */
  let scenariosRun = 0;
  const settle = async () => {
    if (scenariosRun++ === 0) return;
    const s = await settleDatabase(dbUrl);
    log(
      `   settled the database: VACUUM (ANALYZE) ${s.vacuum} s, ${s.checkpoint === null ? 'no CHECKPOINT (not allowed)' : `CHECKPOINT ${s.checkpoint} s`}`,
    );
  };
  let stored: StoredResult | undefined;
  const ingestKeys = [...scenarios.keys()].filter((k) => ONLY.has(k));
  if (opts.stored > 0) {
    // the second service: the same command and settings, its own data dir and database on the same PostgreSQL
    const storedDb = await createScratchDatabase(withDatabase(dbUrl, 'postgres'));
    if (scratch) scratches.push(storedDb);
    const storedDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-bench-stored-'));
    dataDirs.push(storedDir);
    log(`second service on ${storedDb.name} (for --stored)`);
    const second = await startService(
      cmd,
      { ...serviceEnv, TRACKWAY_DATA_DIR: storedDir, PORT: String(storedPort), DATABASE_URL: storedDb.url },
      storedPort,
    );
    children.push(second.child);
    const o2 = await organisation(second.base, 'shop@bench.example', 'bench-shop.example');
    const walStored = opts.walEvents > 0 ? await openWalProbe(storedDb.url) : undefined;
    serviceRss.scenario = 'stored';
    stored = await benchStored({
      refs: { bare, limit },
      empty: { server: service, databaseUrl: dbUrl, org, scenarios, wal },
      stored: { server: second, databaseUrl: storedDb.url, org: o2.org, scenarios: buildScenarios({ ...o2, run, send }), wal: walStored },
      events: opts.stored,
      perVisitor: opts.storedPerVisitor,
      keys: ingestKeys,
      cfg,
      walEvents: opts.walEvents,
    });
    await walStored?.close();
    results.push(...stored.results);
    walShots.push(...stored.wal);
  } else {
    for (const key of ingestKeys) {
      const sc = scenarios.get(key)!;
      await settle();
      serviceRss.scenario = key;
      results.push(await compare(servers, sc, cfg));
      if (wal && sc.limit) {
        const targets = [
          { label: 'limit', server: limit, make: sc.make },
          { label: 'service', server: service, make: sc.make },
        ];
        walShots.push(...(await scenarioWal(wal, key, targets, opts.walEvents, cfg)));
      }
    }
  }

  let rates: RatesResult | undefined;
  if (ONLY.has('rates')) {
    await settle();
    serviceRss.scenario = 'rates';
    rates = await benchRates({
      servers: { limit, service },
      scenario: scenarios.get('view')!,
      shares: opts.rates,
      limitRps: results.find((r) => r.scenario === 'view')?.limit?.rps,
      cfg,
    });
  }

  let mixed: MixedResult | undefined;
  if (ONLY.has('mixed')) {
    const domain = 'mixed-shop.example';
    const m = await organisation(service.base, 'mixed@bench.example', domain);
    await settle();
    serviceRss.scenario = 'mixed';
    mixed = await benchMixed({
      servers,
      cfg,
      mix: opts.mix,
      org: m.org,
      domain,
      token: m.token,
      run,
      databaseUrl: dbUrl,
      receiverPort: mixedPort,
      commitTimestamps,
      send,
      api: (method, p, body) => json(method, service.base + p, body, m.token),
      wal,
      walEvents: opts.walEvents,
    });
    results.push(mixed.max);
    walShots.push(...mixed.wal.map((w) => ({ scenario: 'mixed', ...w })));
  }
  let dispatch: DispatchResult | undefined;
  const { n: concurrency, from } = dispatcherConcurrency(serviceEnv);
  if (ONLY.has('dispatch')) {
    log(`\n== dispatch (local keep-alive receiver; got loop at ${concurrency} in flight, from ${from})`);
    await settle();
    serviceRss.scenario = 'dispatch';
    dispatch = await benchDispatch({
      serviceBase: service.base,
      servicePid: service.pid,
      postmasterPid: db.postmasterPid,
      databaseUrl: dbUrl,
      token,
      org,
      receiverPort,
      quick: opts.quick,
      rounds: opts.rounds,
      concurrency,
      gotMode: opts.gotMode,
      serviceRss,
      serviceWindows,
      wal,
      log,
    });
    // per delivery: the table's "request" is a delivery here
    if (dispatch.wal_by_relation) walShots.push({ scenario: 'dispatch (per delivery)', ...dispatch.wal_by_relation });
  }
  await wal?.close();

  const metrics = await (await fetch(`${service.base}/metrics`)).text();
  const pick = (name: string) =>
    metrics
      .split('\n')
      .filter((l) => l.startsWith(name) && !l.includes('bucket'))
      .join('; ');
  const limitStats = (await (await fetch(`${limit.base}/stats`)).json()) as { batches: number; rows: number };
  const rss = {
    idle_sum_mb: Math.round(idle.sumMb),
    peak_sum_mb: Math.round(serviceRss.sumMb),
    peak_largest_process_mb: Math.round(serviceRss.maxMb),
    processes: serviceRss.processes,
    by_scenario: serviceRss.peaksByScenario(),
  };

  const summary = {
    when: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model,
      memory_gb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      loadavg_at_end: os.loadavg(),
    },
    database: db,
    service: { command: cmd.line, how: cmd.how, processes_at_start: serviceProcesses, ready_after_s: Number(readyAfter.toFixed(1)) },
    method: {
      connections: opts.connections,
      duration_s: opts.duration,
      rounds: opts.rounds,
      quick: opts.quick,
      stored_events: opts.stored,
      wal_requests: opts.walEvents,
      mix: opts.mix,
      order: 'warm-up of each, then rounds bare → limit → service',
      limit_group_commit: { max_batch: opts.limitBatch, in_flight: opts.limitInFlight },
      tracking_rate_limit: serviceEnv.TRACKING_RATE_LIMIT,
    },
    results,
    rates,
    stored: stored ? { facts: stored.facts } : undefined,
    mixed: mixed ? { ...mixed, max: undefined } : undefined,
    wal: walShots,
    dispatch,
    service_rss: rss,
    /** when each measured service round ran, on the clock of V8's CPU profiles (scripts/profile-summary.ts --bench) */
    service_windows: serviceWindows,
    limit_batches: { ...limitStats, rows_per_batch: limitStats.batches ? Number((limitStats.rows / limitStats.batches).toFixed(1)) : 0 },
    service_ingest_metrics: { batch_size: pick('trackway_ingest_batch_size'), commit_seconds: pick('trackway_ingest_commit_seconds') },
    service_dispatch_metrics: { statement_rows: pick('trackway_webhook_statement_rows') },
    /** V8 garbage-collection pauses over the whole run, summed over the service's workers, by kind (prom-client's default metric) */
    service_gc: pick('trackway_nodejs_gc_duration_seconds'),
  };
  const file = path.join(resultsDir, `bench-${summary.when.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(summary, null, 2) + '\n');

  log(`\ningest batches (service): ${summary.service_ingest_metrics.batch_size}`);
  log(`ingest commits (service): ${summary.service_ingest_metrics.commit_seconds}`);
  if (dispatch) log(`dispatch statements (service, deliveries per statement): ${summary.service_dispatch_metrics.statement_rows}`);
  log(`GC pauses (service, whole run): ${summary.service_gc}`);
  log(`limit server: ${limitStats.rows} rows in ${limitStats.batches} transactions (${summary.limit_batches.rows_per_batch} per batch)`);
  const out: string[] = [
    '',
    `== summary: ${opts.rounds} rounds × ${opts.duration} s at ${opts.connections} connections, rounds alternating bare → limit → service`,
    `service: ${cmd.line} [${cmd.how}]`,
    `database: ${db.kind} PostgreSQL ${db.version} at ${db.where}, fsync ${db.settings.fsync}, synchronous_commit ${db.settings.synchronous_commit}; PostgreSQL CPU = ${db.cpuScope}`,
    '',
    ...resultsTable(results),
    '',
    'per round:',
    ...perRoundLines(results).map((l) => '  ' + l),
    '',
    ...(stored ? [...storedLines(stored), ''] : []),
    ...(rates ? [...ratesLines(rates), ''] : []),
    ...(mixed ? [...mixedLines(mixed), ''] : []),
    ...(walShots.length ? [...walLines(walShots), ''] : []),
    ...(dispatch ? dispatchLines(dispatch) : []),
    rssLine(rss),
    `written to ${path.relative(ROOT, file)}`,
  ];
  process.stdout.write(out.join('\n') + '\n');
  return file;
}

main()
  .then(
    async (file) => {
      await cleanup();
      if (opts.cpuProf) process.stdout.write(profilesNote(ROOT, file, STARTED));
    },
    async (err: unknown) => {
      console.error(err);
      await cleanup();
      process.exitCode = 1;
    },
  )
  .finally(() => process.exit());
