// The bound on the outbox backlog per integration (WEBHOOK_MAX_BACKLOG,
// default 100,000 pending deliveries). A small periodic counter (every 5 s,
// in every process that runs the webhook runtime; one at a time does the
// writing) counts each live integration's pending deliveries up to the bound
// and keeps webhook_backlog_limits listing those at it. The outbox reads that
// table in its insert (no count on the hot path) and writes their new
// deliveries as failed with last_error "backlog limit reached": nothing is
// dropped, the deliveries API lists them and retries them. The bound is
// approximate by what arrives between two checks.
//
// Operator signal: the gauges trackway_webhook_backlog_limited_integrations
// and trackway_webhook_backlog_max_pending, the counter
// trackway_webhook_backlog_limit_reached_total, and a warn log when an
// integration reaches the bound, repeated at most once a minute while any
// integration stays there.
import client from 'prom-client';
import type { Deps } from '../deps.ts';
import { type Backlog, clearLimits, countBacklogs, listLimits, replaceLimits, tryLockLimits } from './backlog.repository.ts';
import { BACKLOG_ERROR } from './outbox.repository.ts';

export interface BacklogStatus {
  /** integrations at the bound after this check */
  limited: Backlog[];
  /** the largest pending backlog of one integration (counted up to the bound) */
  maxPending: number;
}

export interface BacklogMonitor {
  /** Counts now and updates the limits (tests call it instead of waiting for the timer). */
  check(): Promise<BacklogStatus>;
  stop(): void;
}

export interface BacklogOptions {
  /** how often the backlog is counted (default 5 s) */
  intervalMs?: number;
  /** at most one reminder warn per this long while integrations stay limited (default 60 s) */
  reminderMs?: number;
}

interface BacklogMetrics {
  limited: client.Gauge;
  maxPending: client.Gauge;
  reached: client.Counter;
}

const byRegistry = new WeakMap<client.Registry, BacklogMetrics>();

function backlogMetrics(registry: client.Registry): BacklogMetrics {
  let m = byRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  m = {
    limited: new client.Gauge({
      name: 'trackway_webhook_backlog_limited_integrations',
      help: `Integrations at WEBHOOK_MAX_BACKLOG pending deliveries: their new deliveries are written failed ("${BACKLOG_ERROR}")`,
      registers,
    }),
    maxPending: new client.Gauge({
      name: 'trackway_webhook_backlog_max_pending',
      help: 'Pending deliveries of the integration with the largest backlog (counted up to WEBHOOK_MAX_BACKLOG)',
      registers,
    }),
    reached: new client.Counter({
      name: 'trackway_webhook_backlog_limit_reached_total',
      help: 'Times an integration reached WEBHOOK_MAX_BACKLOG pending deliveries (seen by this process)',
      registers,
    }),
  };
  byRegistry.set(registry, m);
  return m;
}

export function startBacklogMonitor(deps: Pick<Deps, 'db' | 'config' | 'log' | 'metrics'>, opts: BacklogOptions = {}): BacklogMonitor {
  const { db, log } = deps;
  const bound = deps.config.webhookMaxBacklog;
  const metrics = backlogMetrics(deps.metrics.registry);
  const intervalMs = opts.intervalMs ?? 5_000;
  const reminderMs = opts.reminderMs ?? 60_000;
  let lastReminder = 0;
  let failures = 0;
  let running: Promise<BacklogStatus> | undefined;
  let stopped = false;

  if (bound === undefined) {
    // turned off: whatever an earlier configuration limited is released
    clearLimits(db).catch((err: unknown) => log.warn({ err }, 'could not clear the webhook backlog limits'));
    return { check: () => Promise.resolve({ limited: [], maxPending: 0 }), stop() {} };
  }

  async function count(): Promise<BacklogStatus> {
    const outcome = await db.transaction().execute(async (tx) => {
      if (!(await tryLockLimits(tx))) return undefined; // another process is counting right now
      const backlogs = await countBacklogs(tx, bound!);
      const atBound = backlogs.filter((b) => b.pending >= bound!);
      const changes = await replaceLimits(tx, atBound);
      return { backlogs, atBound, changes };
    });
    if (!outcome) {
      const limited = await listLimits(db);
      return { limited, maxPending: Math.max(0, ...limited.map((l) => l.pending)) };
    }
    const { backlogs, atBound, changes } = outcome;
    for (const b of changes.added) {
      metrics.reached.inc();
      log.warn(
        { orgId: b.org_id, integrationId: b.integration_id, pending: b.pending, maxBacklog: bound },
        `webhook backlog limit reached: new deliveries of this integration are written failed ("${BACKLOG_ERROR}", retryable through the API) until its backlog drains; check its endpoint`,
      );
    }
    for (const r of changes.removed) {
      log.info({ orgId: r.org_id, integrationId: r.integration_id, maxBacklog: bound }, 'webhook backlog back under its limit');
    }
    const now = Date.now();
    if (changes.added.length > 0) lastReminder = now;
    else if (atBound.length > 0 && now - lastReminder >= reminderMs) {
      lastReminder = now;
      log.warn(
        {
          integrations: atBound.slice(0, 20).map((b) => ({ orgId: b.org_id, integrationId: b.integration_id })),
          count: atBound.length,
          maxBacklog: bound,
        },
        'webhook backlog limit still reached: new deliveries of these integrations are written failed',
      );
    }
    return { limited: atBound, maxPending: Math.max(0, ...backlogs.map((b) => b.pending)) };
  }

  function check(): Promise<BacklogStatus> {
    running ??= count()
      .then((status) => {
        failures = 0;
        metrics.limited.set(status.limited.length);
        metrics.maxPending.set(status.maxPending);
        return status;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  const timer = setInterval(() => {
    if (stopped) return;
    check().catch((err: unknown) => {
      // the database is away: the limits stay as they were until it is back
      if (failures++ % 12 === 0) log.warn({ err }, 'counting the webhook backlog failed; retrying');
    });
  }, intervalMs);
  timer.unref();

  return {
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
