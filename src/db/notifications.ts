// The NOTIFY channels and the one LISTEN connection of a process. Each
// channel is sent on (after commit) by the repository of the area that owns
// what changed, and heard by whoever caches or waits for it. It
// reconnects with backoff after a database restart; since notifications sent
// while it was away are lost, subscribers are told on every (re)connect.
import pg from 'pg';
import type { Logger } from '../log.ts';

/** New deliveries committed (webhooks): wake the dispatchers. */
export const DELIVERIES_CHANNEL = 'trackway_deliveries';
/** An organisation's integrations changed (webhooks): drop its cached targets. */
export const INTEGRATIONS_CHANNEL = 'trackway_integrations';
/** An organisation's settings or suppression list changed (platform, privacy): drop its cached policy. */
export const ORGANISATIONS_CHANNEL = 'trackway_organisations';
/** A privacy request was queued (privacy): wake the privacy runner (src/privacy/runner.worker.ts). */
export const PRIVACY_CHANNEL = 'trackway_privacy';
/** Visitors of an organisation were deleted (identity: erasure, retention): forget what is remembered of them (src/identity/fresh-visitors.service.ts). */
export const VISITORS_CHANNEL = 'trackway_visitors';

type Listener = (payload: string) => void;

export interface Notifications {
  /** calls fn for every notification on the channel; returns an unsubscribe */
  on(
    channel:
      typeof DELIVERIES_CHANNEL | typeof INTEGRATIONS_CHANNEL | typeof ORGANISATIONS_CHANNEL | typeof PRIVACY_CHANNEL | typeof VISITORS_CHANNEL,
    fn: Listener,
  ): () => void;
  /** calls fn after every successful (re)connect, when notifications may have been missed */
  onConnect(fn: () => void): () => void;
  /** resolves once the first LISTEN is in place (or rejects after a failed first try) */
  ready: Promise<void>;
  close(): Promise<void>;
}

const CHANNELS = [DELIVERIES_CHANNEL, INTEGRATIONS_CHANNEL, ORGANISATIONS_CHANNEL, PRIVACY_CHANNEL, VISITORS_CHANNEL];
const HEARTBEAT_MS = 30_000;

export function startNotifications(connectionString: string, log: Logger): Notifications {
  const listeners = new Map<string, Set<Listener>>(CHANNELS.map((c) => [c, new Set<Listener>()]));
  const connectListeners = new Set<() => void>();
  let client: pg.Client | undefined;
  let closed = false;
  let backoff = 100;
  let retryTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let resolveReady!: () => void;
  let rejectReady!: (e: unknown) => void;
  let first = true;
  const ready = new Promise<void>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => {}); // a caller that does not wait must not see an unhandled rejection

  const reconnect = (c: pg.Client, err?: unknown) => {
    if (client !== c) return; // already handled
    client = undefined;
    clearInterval(heartbeat);
    c.removeAllListeners('notification');
    c.end().catch(() => {});
    if (closed) return;
    log.warn({ err, retryInMs: backoff }, 'the LISTEN connection was lost; reconnecting');
    retryTimer = setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 5_000);
  };

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new pg.Client({ connectionString, application_name: 'trackway-listen', keepAlive: true });
    client = c;
    c.on('error', (err) => reconnect(c, err));
    c.on('end', () => reconnect(c));
    c.on('notification', (msg) => {
      for (const fn of listeners.get(msg.channel) ?? []) {
        try {
          fn(msg.payload ?? '');
        } catch (err) {
          log.error({ err, channel: msg.channel }, 'a notification listener failed');
        }
      }
    });
    try {
      await c.connect();
      for (const ch of CHANNELS) await c.query(`LISTEN ${c.escapeIdentifier(ch)}`);
    } catch (err) {
      if (first) {
        first = false;
        rejectReady(err);
      }
      reconnect(c, err);
      return;
    }
    if (closed || client !== c) {
      c.end().catch(() => {});
      return;
    }
    backoff = 100;
    heartbeat = setInterval(() => {
      c.query('SELECT 1').catch((err: unknown) => reconnect(c, err));
    }, HEARTBEAT_MS);
    heartbeat.unref();
    if (first) {
      first = false;
      resolveReady();
    } else {
      log.info('the LISTEN connection is back');
    }
    for (const fn of connectListeners) fn();
  }

  void connect();

  return {
    on(channel, fn) {
      listeners.get(channel)!.add(fn);
      return () => listeners.get(channel)!.delete(fn);
    },
    onConnect(fn) {
      connectListeners.add(fn);
      return () => connectListeners.delete(fn);
    },
    ready,
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      clearInterval(heartbeat);
      const c = client;
      client = undefined;
      if (c) await c.end().catch(() => {});
    },
  };
}
