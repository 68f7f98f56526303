// `trackway serve`: database → migrations → dependencies → HTTP server and
// the webhook dispatcher (unless --no-dispatcher) and the privacy runner,
// with a graceful shutdown.
// `trackway dispatch`: the same without HTTP.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { bannerBase, listenAddress, printBanner } from './banner.ts';
import type { Config } from './config.ts';
import { createDb, type Database, type DbHandle, migrate } from './db/database.ts';
import { locateDatabase } from './db/connect.ts';
import type { Deps } from './deps.ts';
import { createApi } from './http/api.ts';
import { createApp } from './http/app.ts';
import { createFastPath } from './http/fast-path.ts';
import { answerClientError } from './http/client-errors.ts';
import { createMetrics, type Metrics } from './http/metrics.ts';
import { createTrafficLimits } from './http/traffic-limits.ts';
import { handlers } from './http/registry.ts';
import type { Logger } from './log.ts';
import { ensurePlatformAccount } from './platform/accounts.service.ts';
import { sealSecretsAtRest } from './platform/sealing.service.ts';
import { loadCipher, loadJwtSecret } from './platform/secrets.service.ts';
import { Tokens } from './platform/tokens.crypto.ts';
import { createTargetCache } from './webhooks/targets.service.ts';
import type { DispatcherOptions } from './webhooks/dispatcher.worker.ts';
import { startWebhookRuntime, type WebhookRuntime } from './webhooks/runtime.worker.ts';
import { startPartitionMaintenance } from './tracking/partitions.worker.ts';
import { createOrganisationDirectory } from './platform/organisation-directory.service.ts';
import { loadGeoLocator } from './geo/geo.service.ts';
import { EventIds } from './tracking/events.repository.ts';
import { createIngestor } from './tracking/ingest.service.ts';
import { FreshVisitors } from './identity/fresh-visitors.service.ts';
import { BotTally, keepBotsOut } from './tracking/bot-counts.service.ts';
import { fastTrackingHandlers } from './tracking/fast-ingest.handlers.ts';
import { SubjectHasher } from './privacy/subject-hash.crypto.ts';
import { suppressionCheck } from './privacy/suppression.service.ts';
import { PrivacyRunner, type PrivacyRunnerOptions } from './privacy/runner.worker.ts';

export interface ServeOptions {
  dispatcher: boolean;
  /** the dispatcher's capacity shares and circuit breaker (defaults otherwise) */
  dispatcherOptions?: DispatcherOptions;
  /** the periodic jobs: partition maintenance and the webhook backlog counter (default true; one worker of a cluster) */
  jobs?: boolean;
  /** create TRACKWAY_BOOTSTRAP_PLATFORM's account (default true; a cluster's primary does it before the workers start) */
  bootstrap?: boolean;
  /** a cluster worker's number, sent as X-Trackway-Worker on every response */
  worker?: number;
  /** ingest batches this process writes at once (default: INGEST_IN_FLIGHT, the host's, for a single process) */
  ingestInFlight?: number;
  /** the process's metrics (default: a new registry) */
  metrics?: Metrics;
  /** the privacy runner's timings (defaults otherwise); it runs where the jobs or a dispatcher run */
  privacy?: PrivacyRunnerOptions;
}

export interface RunningServer {
  url: string;
  deps: Deps;
  /** the LISTEN connection and, unless turned off, the dispatcher */
  webhooks: WebhookRuntime;
  /** erase/export requests, erasure notices' redaction and visitor retention; undefined where neither jobs nor a dispatcher run */
  privacy: PrivacyRunner | undefined;
  close(): Promise<void>;
}

export async function buildDeps(
  config: Config,
  db: Database,
  log: Logger,
  metrics: Metrics = createMetrics(),
  ingestInFlight = config.ingestInFlight,
): Promise<Deps> {
  const cipher = loadCipher(config.secretKey, config.dataDir);
  // what older versions kept in clear is sealed before anything reads it
  await sealSecretsAtRest(db, cipher, log);
  const tokens = new Tokens(await loadJwtSecret(config.jwtSecret, db, cipher), config.jwtTtlSeconds);
  const targets = createTargetCache(db);
  const organisations = createOrganisationDirectory(db, cipher, suppressionCheck(db));
  const geo = loadGeoLocator(config.geoipDb, log, { dataDir: config.dataDir });
  const subjects = new SubjectHasher(cipher);
  const freshVisitors = new FreshVisitors();
  const eventIds = new EventIds();
  // known bots are answered without being queued (README "Bots")
  const ingest = keepBotsOut(
    createIngestor({ db, log, metrics, targets, subjects, freshVisitors, eventIds }, { maxConcurrent: ingestInFlight }),
    new BotTally(db, log, metrics),
  );
  // one set of tracking limits for the process: the fast path and the Koa handlers charge the same buckets
  const trackingLimits = createTrafficLimits('tracking', config.trackingLimits, metrics.trackingRefused);
  const analyticsLimits = createTrafficLimits('analytics', config.trackingLimits);
  return {
    config,
    db,
    log,
    metrics,
    tokens,
    cipher,
    targets,
    organisations,
    geo,
    ingest,
    subjects,
    freshVisitors,
    eventIds,
    trackingLimits,
    analyticsLimits,
  };
}

/** Everything that needs the database and HTTP, on an already-open database. */
export async function startOnDatabase(config: Config, handle: DbHandle, log: Logger, opts: ServeOptions): Promise<RunningServer> {
  const deps = await buildDeps(config, handle.db, log, opts.metrics, opts.ingestInFlight);
  const jobs = opts.jobs ?? true;
  if (config.bootstrap && opts.bootstrap !== false) {
    const made = await ensurePlatformAccount(deps, { ...config.bootstrap, name: '' });
    if (made.created) log.info({ platform: config.bootstrap.platform, email: config.bootstrap.email }, 'created the bootstrap platform account');
  }
  const registry = handlers(deps);
  const api = await createApi(deps, registry);
  const app = await createApp(deps, registry, api);
  // slow clients: a request must send its headers within HTTP_HEADERS_TIMEOUT (10 s) and be
  // received completely within HTTP_REQUEST_TIMEOUT (30 s); node checks both on an interval,
  // which is kept well below the shorter one so a cut-off is not late by up to 30 s
  const { httpHeadersTimeoutMs, httpRequestTimeoutMs } = config;
  // the hot tracking requests are answered before Koa when well-formed (TRACKWAY_FAST_PATH)
  // with workers, every answer says which one wrote it: the Koa app's by setHeader, the fast path's in its one writeHead
  const worker = opts.worker === undefined ? undefined : String(opts.worker);
  const koa = app.callback();
  const callback = createFastPath(
    deps,
    api,
    fastTrackingHandlers(deps),
    worker === undefined
      ? koa
      : (req, res) => {
          res.setHeader('X-Trackway-Worker', worker);
          return koa(req, res);
        },
    worker === undefined ? [] : ['X-Trackway-Worker', worker],
  );
  const server = http.createServer(
    {
      headersTimeout: httpHeadersTimeoutMs,
      requestTimeout: httpRequestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(httpHeadersTimeoutMs / 4))),
    },
    callback,
  );
  server.keepAliveTimeout = 65_000;
  // what node's HTTP parser refuses is answered in the area's JSON error shape too
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${addr.port}`;
  const webhooks = await startWebhookRuntime(deps, handle, { dispatcher: opts.dispatcher, dispatcherOptions: opts.dispatcherOptions, backlog: jobs });
  const stopMaintenance = jobs ? startPartitionMaintenance(deps.db, config.eventRetentionDays, log) : () => {};
  const privacy = jobs || opts.dispatcher ? new PrivacyRunner(deps, { retention: jobs, ...opts.privacy }) : undefined;
  privacy?.start(webhooks.notifications);

  let closing: Promise<void> | undefined;
  return {
    url,
    deps,
    webhooks,
    privacy,
    close() {
      closing ??= (async () => {
        stopMaintenance();
        // a request being run hands its claim back after its current step
        const privacyStopped = privacy?.stop();
        // the dispatcher stops claiming and finishes its requests meanwhile
        const stopping = webhooks.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          // in-flight requests get 10 s to finish
          setTimeout(() => {
            server.closeAllConnections();
            resolve();
          }, 10_000).unref();
        });
        await stopping;
        await privacyStopped;
        // whatever was accepted into the ingest queue is committed before the pool closes
        await deps.ingest.drain();
      })();
      return closing;
    },
  };
}

/**
 * The database lifecycle `serve` and `dispatch` share: locate it (embedded or
 * DATABASE_URL), open a pool, migrate, run `start`; the function returned
 * stops what `start` started, then closes the pool and releases the database.
 */
async function onMigratedDatabase(
  config: Config,
  log: Logger,
  poolSize: number,
  start: (handle: DbHandle, where: string) => Promise<() => Promise<void>>,
): Promise<() => Promise<void>> {
  const location = await locateDatabase(config, log, 'serve');
  const handle = createDb(location.url, {
    max: poolSize,
    onError: (err) => log.warn({ err }, 'idle database connection failed'),
  });
  try {
    const applied = await migrate(handle.db);
    if (applied.length) log.info({ migrations: applied }, 'applied migrations');
    const stop = await start(handle, location.embedded ? `embedded PostgreSQL in ${config.dataDir}` : 'DATABASE_URL');
    return async () => {
      await stop();
      await handle.close();
      await location.release();
    };
  } catch (e) {
    await handle.close();
    await location.release();
    throw e;
  }
}

/** `trackway dispatch`: the dispatcher alone on the database (migrated first, like serve). */
export function dispatch(config: Config, log: Logger): Promise<() => Promise<void>> {
  return onMigratedDatabase(config, log, 10, async (handle, where) => {
    const deps = await buildDeps(config, handle.db, log);
    const webhooks = await startWebhookRuntime(deps, handle, { dispatcher: true });
    // privacy requests run beside the dispatcher (retention stays with serve's periodic jobs)
    const privacy = new PrivacyRunner(deps, { retention: false });
    privacy.start(webhooks.notifications);
    log.info({ database: where }, 'Trackway dispatcher is up');
    process.stdout.write(`Trackway dispatcher is running (${where})\n`);
    return async () => {
      await privacy.stop();
      await webhooks.stop();
    };
  });
}

export function serve(config: Config, log: Logger, opts: ServeOptions): Promise<() => Promise<void>> {
  return onMigratedDatabase(config, log, 40, async (handle, where) => {
    const running = await startOnDatabase(config, handle, log, opts);
    // the log and the banner name the same address (a PORT of 0 is the port actually taken)
    const port = Number(new URL(running.url).port);
    log.info({ listen: listenAddress(config, port), url: bannerBase(config, port), database: where }, 'Trackway is up');
    printBanner(config, where, [], port);
    return () => running.close();
  });
}
