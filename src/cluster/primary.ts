// The primary of `trackway serve --workers N` (node:cluster: Node 20 has no
// reusePort, so the primary holds the listening socket and hands each new
// connection to a worker in turn). It does what happens once per host:
// locates the database (starting the embedded PostgreSQL), migrates it,
// makes the data-dir key and the bootstrap account, and sizes the workers'
// pools from max_connections. Then it forks the workers (worker.ts), prints
// the banner once all of them serve, restarts a worker that dies (with a
// backoff), aggregates /metrics (cluster-metrics.ts), and on SIGINT/SIGTERM
// stops the workers gracefully, then the embedded PostgreSQL. It loads none
// of the app (no geo data, no pool while serving): it stays small, and an
// app bug cannot take it, and with it every worker, down.
import cluster, { type Worker } from 'node:cluster';
import { bannerBase, listenAddress, printBanner } from '../banner.ts';
import type { Config } from '../config.ts';
import { locateDatabase } from '../db/connect.ts';
import { createDb, maxConnections, migrate } from '../db/database.ts';
import type { Logger } from '../log.ts';
import { ensurePlatformAccount } from '../platform/accounts.service.ts';
import { sealSecretsAtRest } from '../platform/sealing.service.ts';
import { loadCipher, loadJwtSecret } from '../platform/secrets.service.ts';
import type { ServeOptions } from '../server.ts';
import { MetricsAggregator } from './cluster-metrics.ts';
import { type HelloMessage, isMessage, type ReadyMessage, type StartMessage } from './messages.ts';
import { workerIngestInFlight, workerPoolSize } from './pool-size.ts';
import { workerExecArgv } from './worker-flags.ts';
import { GeoIpError, prepareGeoRanges } from '../geo/geo.service.ts';
import { dispatchersFor } from '../webhooks/host-split.rules.ts';

/** a worker that dies is started again after this, doubled for each quick death in a row, up to RESTART_MAX_MS */
const RESTART_MIN_MS = 500;
const RESTART_MAX_MS = 30_000;
/** a worker that lived this long before dying starts the backoff over */
const STABLE_MS = 30_000;
/** workers get this long to stop gracefully (in-flight requests 10 s, the dispatcher's grace 5 s, the ingest drain) */
const STOP_TIMEOUT_MS = 30_000;

interface Slot {
  /** 1..N: workers 1..k (WEBHOOK_DISPATCH_WORKERS, default 1) run a dispatcher, worker 1 the periodic jobs; a restarted worker keeps its number */
  n: number;
  worker: Worker | undefined;
  ready: boolean;
  startedAt: number;
  /** quick deaths in a row */
  failures: number;
  restart: NodeJS.Timeout | undefined;
}

/** Migrations, keys, the geo ranges file, the bootstrap account and the pool size: once, before any worker starts. */
async function prepare(config: Config, log: Logger, url: string, workers: number): Promise<number> {
  const handle = createDb(url, { max: 2, onError: (err) => log.warn({ err }, 'idle database connection failed') });
  try {
    const applied = await migrate(handle.db);
    if (applied.length) log.info({ migrations: applied }, 'applied migrations');
    // generated here when missing, so that workers starting together read one key
    const cipher = loadCipher(config.secretKey, config.dataDir);
    // built here when missing, so that workers starting together share one (each then reads it with pread)
    try {
      prepareGeoRanges(config.geoipDb, { dataDir: config.dataDir }, log);
    } catch (err) {
      // an unusable GEOIP_DB is reported by the workers, which refuse to start with it
      if (!(err instanceof GeoIpError)) log.warn({ err }, 'no geo ranges file: each worker reads the mmdb files into memory instead');
    }
    // what older versions kept in clear is sealed once, before any worker reads it
    await sealSecretsAtRest(handle.db, cipher, log);
    await loadJwtSecret(config.jwtSecret, handle.db, cipher);
    if (config.bootstrap) {
      const made = await ensurePlatformAccount({ db: handle.db, config }, { ...config.bootstrap, name: '' });
      if (made.created) log.info({ platform: config.bootstrap.platform, email: config.bootstrap.email }, 'created the bootstrap platform account');
    }
    return workerPoolSize(await maxConnections(handle.db), workers);
  } finally {
    await handle.close();
  }
}

export async function runPrimary(config: Config, log: Logger, opts: ServeOptions, workers: number): Promise<void> {
  const location = await locateDatabase(config, log, 'serve');
  let poolSize: number;
  try {
    poolSize = await prepare(config, log, location.url, workers);
  } catch (e) {
    await location.release();
    throw e;
  }
  const where = location.embedded ? `embedded PostgreSQL in ${config.dataDir}` : 'DATABASE_URL';

  // the k dispatchers split the host's caps (host-split.rules.ts), so that WEBHOOK_CONCURRENCY holds per host
  const dispatchers = opts.dispatcher ? dispatchersFor(workers, config.webhookDispatchWorkers, config.webhookShare) : 0;
  const slots: Slot[] = Array.from({ length: workers }, (_, i) => ({
    n: i + 1,
    worker: undefined,
    ready: false,
    startedAt: 0,
    failures: 0,
    restart: undefined,
  }));
  const metrics = new MetricsAggregator(() => slots.flatMap((s) => (s.ready && s.worker ? [s.worker] : [])));
  let phase: 'starting' | 'serving' | 'stopping' = 'starting';
  let allReady!: () => void;
  let startupFailed!: (reason: string, code: number) => void;
  const started = new Promise<void>((resolve, reject) => {
    allReady = resolve;
    startupFailed = (reason, code) => reject(Object.assign(new Error(reason), { exitCode: code }));
  });
  let allExited: () => void = () => {};

  const exit = (code: number) => {
    log.flush?.();
    process.exit(code);
  };

  function fork(slot: Slot): void {
    slot.restart = undefined;
    const worker = cluster.fork();
    Object.assign(slot, { worker, ready: false, startedAt: Date.now() });
    worker.on('message', (m: unknown) => {
      if (metrics.onMessage(worker, m)) return;
      if (isMessage<HelloMessage>(m, 'trackway:hello')) {
        const start: StartMessage = {
          type: 'trackway:start',
          worker: slot.n,
          databaseUrl: location.url,
          poolSize,
          ingestInFlight: workerIngestInFlight(config.ingestInFlight, workers),
          // concurrent dispatchers are safe: a claim is a lease (claims.repository.ts)
          dispatcher: opts.dispatcher && slot.n <= dispatchers,
          dispatchers,
          jobs: slot.n === 1,
        };
        worker.send(start);
      } else if (isMessage<ReadyMessage>(m, 'trackway:ready')) {
        slot.ready = true;
        if (phase === 'starting' && slots.every((s) => s.ready)) allReady();
        else if (phase === 'serving') log.info({ worker: slot.n, pid: worker.process.pid }, 'worker restarted and serving');
      }
    });
  }

  cluster.on('exit', (worker, code, signal) => {
    metrics.onExit(worker);
    const slot = slots.find((s) => s.worker === worker);
    if (!slot) return;
    const pid = worker.process.pid;
    slot.worker = undefined;
    slot.ready = false;
    if (phase === 'stopping') {
      if (slots.every((s) => !s.worker)) allExited();
    } else if (phase === 'starting') {
      startupFailed(`worker ${slot.n} (pid ${pid}) exited while starting (${signal ?? `exit code ${code}`})`, code || 1);
    } else {
      if (Date.now() - slot.startedAt >= STABLE_MS) slot.failures = 0;
      const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** slot.failures);
      slot.failures++;
      log.error({ worker: slot.n, pid, code, signal, restartInMs: delay }, 'worker exited unexpectedly; starting a new one');
      slot.restart = setTimeout(() => fork(slot), delay);
    }
  });

  /** SIGTERM to every worker: each finishes its requests, commits what it accepted, hands back its claims. */
  async function stopWorkers(): Promise<void> {
    phase = 'stopping';
    for (const s of slots) clearTimeout(s.restart);
    const live = slots.flatMap((s) => (s.worker ? [s.worker] : []));
    if (live.length === 0) return;
    const exited = new Promise<void>((resolve) => (allExited = resolve));
    for (const w of live) w.process.kill('SIGTERM');
    const timer = setTimeout(() => {
      for (const s of slots) {
        if (!s.worker) continue;
        log.warn({ worker: s.n, pid: s.worker.process.pid }, `worker did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`);
        s.worker.process.kill('SIGKILL');
      }
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    stopWorkers()
      .then(() => location.release())
      .then(
        () => exit(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          exit(1);
        },
      );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv) });
  for (const slot of slots) fork(slot);
  try {
    await started;
  } catch (e) {
    if (stopping) return; // a signal came first and is stopping everything
    stopping = true;
    const { message, exitCode } = e as Error & { exitCode: number };
    process.stderr.write(`trackway: ${message}; stopping\n`);
    await stopWorkers();
    await location.release();
    exit(exitCode);
  }
  if (stopping) return;
  phase = 'serving';
  const pids = slots.map((s) => s.worker?.process.pid);
  log.info({ listen: listenAddress(config), url: bannerBase(config), database: where, workers, pids, pool: poolSize }, 'Trackway is up');
  const roles =
    dispatchers === 0
      ? 'worker 1 also runs the periodic jobs'
      : dispatchers === 1
        ? 'worker 1 also runs the webhook dispatcher and the periodic jobs'
        : `${dispatchers === workers ? 'every worker' : `workers 1–${dispatchers}`} also run${dispatchers === workers ? 's' : ''} a webhook dispatcher, worker 1 the periodic jobs`;
  printBanner(config, where, [`  Workers     ${workers} (pids ${pids.join(', ')}); ${roles}`]);
}
