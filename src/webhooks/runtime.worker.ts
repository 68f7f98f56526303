// What a process runs for webhooks besides its handlers: the shared LISTEN
// connection (which keeps every process's integration and organisation
// caches fresh, and its memory of fresh visitors true), the
// backlog counter (WEBHOOK_MAX_BACKLOG, backlog.worker.ts) and, when asked, the
// dispatcher with the keeper of its table's statistics (delivery-statistics.worker.ts).
// Used by `trackway serve` and `trackway dispatch`.
import type { DbHandle } from '../db/database.ts';
import type { Deps } from '../deps.ts';
import { type BacklogMonitor, type BacklogOptions, startBacklogMonitor } from './backlog.worker.ts';
import { type DeliveryStatistics, startDeliveryStatistics } from './delivery-statistics.worker.ts';
import { Dispatcher, type DispatcherOptions } from './dispatcher.worker.ts';
import { INTEGRATIONS_CHANNEL, type Notifications, ORGANISATIONS_CHANNEL, startNotifications, VISITORS_CHANNEL } from '../db/notifications.ts';
import { parseOrgId } from '../db/tenancy.ts';

/** where another process counts the backlog */
const idleBacklogMonitor: BacklogMonitor = { check: () => Promise.resolve({ limited: [], maxPending: 0 }), stop() {} };

export interface WebhookRuntime {
  notifications: Notifications;
  dispatcher: Dispatcher | undefined;
  /** with a dispatcher: keeps the deliveries' statistics from falling far behind */
  statistics: DeliveryStatistics | undefined;
  backlog: BacklogMonitor;
  /** stops the dispatcher gracefully, then the LISTEN connection */
  stop(): Promise<void>;
}

export async function startWebhookRuntime(
  deps: Deps,
  handle: DbHandle,
  opts: {
    dispatcher: boolean;
    /** count the backlog here (default true; one worker of a cluster does it for the host) */
    backlog?: boolean;
    dispatcherOptions?: DispatcherOptions;
    backlogOptions?: BacklogOptions;
  },
): Promise<WebhookRuntime> {
  const url = handle.pool.options.connectionString;
  if (!url) throw new Error('the database handle has no connection string');
  const notifications = startNotifications(url, deps.log);
  notifications.on(INTEGRATIONS_CHANNEL, (payload) => {
    const orgId = parseOrgId(payload);
    if (orgId !== undefined) deps.targets.invalidate(orgId);
  });
  notifications.on(ORGANISATIONS_CHANNEL, (payload) => {
    const orgId = parseOrgId(payload);
    if (orgId !== undefined) deps.organisations.invalidate(orgId);
  });
  notifications.on(VISITORS_CHANNEL, (payload) => {
    const orgId = parseOrgId(payload);
    if (orgId !== undefined) deps.freshVisitors.forget(orgId);
  });
  // notifications may have been missed while the connection was away
  notifications.onConnect(() => {
    deps.targets.clear();
    deps.organisations.clear();
    deps.freshVisitors.clear();
  });
  try {
    await notifications.ready;
  } catch (err) {
    // keeps retrying in the background; polling and the cache's expiry cover the gap
    deps.log.warn({ err }, 'LISTEN is not available yet; the dispatcher polls meanwhile');
  }
  const dispatcher = opts.dispatcher ? new Dispatcher(deps, notifications, opts.dispatcherOptions) : undefined;
  dispatcher?.start();
  const statistics = opts.dispatcher ? startDeliveryStatistics(deps) : undefined;
  const backlog = opts.backlog === false ? idleBacklogMonitor : startBacklogMonitor(deps, opts.backlogOptions);
  let stopping: Promise<void> | undefined;
  return {
    notifications,
    dispatcher,
    statistics,
    backlog,
    stop() {
      stopping ??= (async () => {
        backlog.stop();
        statistics?.stop();
        await dispatcher?.stop();
        await notifications.close();
      })();
      return stopping;
    },
  };
}
