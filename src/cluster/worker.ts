// A worker of `trackway serve --workers N` (node:cluster): the whole app
// (HTTP on the shared port, its own pool and ingest queue, its caches) on
// the database the primary located and migrated. Workers 1..k also run a
// webhook dispatcher each (their parts of the host's caps), worker 1 the periodic jobs. The primary tells it what to run
// (messages.ts) and when to stop (SIGTERM); a terminal's Ctrl-C, which
// reaches the whole process group, is left to the primary. If the primary
// dies, node ends the worker at once (its IPC channel closes): nothing it
// acknowledged is lost, since every 2xx follows a commit.
import type { Config } from '../config.ts';
import { createDb } from '../db/database.ts';
import { createMetrics } from '../http/metrics.ts';
import type { Logger } from '../log.ts';
import { type RunningServer, type ServeOptions, startOnDatabase } from '../server.ts';
import { clusterScrape } from './cluster-metrics.ts';
import { type HelloMessage, isMessage, type ReadyMessage, type StartMessage } from './messages.ts';

async function startMessage(): Promise<StartMessage> {
  const received = new Promise<StartMessage>((resolve) => {
    const listen = (m: unknown) => {
      if (!isMessage<StartMessage>(m, 'trackway:start')) return;
      process.off('message', listen);
      resolve(m);
    };
    process.on('message', listen);
  });
  process.send!({ type: 'trackway:hello' } satisfies HelloMessage);
  return received;
}

export async function runWorker(config: Config, baseLog: Logger, opts: ServeOptions): Promise<void> {
  let log = baseLog;
  let stop: (() => Promise<void>) | undefined; // eslint-disable-line prefer-const -- assigned once the server is up, read by the exit path before that
  let stopping = false;
  const exit = (code: number) => {
    log.flush?.();
    process.exit(code);
  };
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    if (!stop) return exit(0); // not serving yet: nothing to finish
    log.info('worker stopping');
    stop().then(
      () => exit(0),
      (err: unknown) => {
        log.error({ err }, 'worker shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGINT', () => {}); // the primary orders the shutdown
  process.on('SIGTERM', shutdown);

  const start = await startMessage();
  log = baseLog.child({ worker: start.worker });
  const metrics = createMetrics();
  metrics.scrape = clusterScrape(metrics.registry);
  const handle = createDb(start.databaseUrl, {
    max: start.poolSize,
    onError: (err) => log.warn({ err }, 'idle database connection failed'),
  });
  let running: RunningServer;
  try {
    running = await startOnDatabase(config, handle, log, {
      ...opts,
      dispatcher: start.dispatcher,
      dispatcherOptions: { ...opts.dispatcherOptions, split: { index: start.worker - 1, count: start.dispatchers } },
      jobs: start.jobs,
      bootstrap: false,
      worker: start.worker,
      ingestInFlight: start.ingestInFlight,
      metrics,
    });
  } catch (e) {
    await handle.close();
    throw e;
  }
  stop = async () => {
    await running.close();
    await handle.close();
  };
  log.info(
    { pid: process.pid, pool: start.poolSize, ingestInFlight: start.ingestInFlight, dispatcher: start.dispatcher, jobs: start.jobs },
    'worker serving',
  );
  process.send!({ type: 'trackway:ready' } satisfies ReadyMessage);
}
