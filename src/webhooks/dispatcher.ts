// The dispatcher: claims due deliveries in batches (woken by NOTIFY, with a
// polling fallback), sends each through a per-endpoint lane (at most
// `perEndpoint` requests in flight per target origin, so one slow receiver
// cannot starve the others, and a global cap), and writes the outcomes back
// in batches. It owns no state that a crash could lose: a claim is a lease in
// the database, and an attempt whose outcome was never written is made again
// once the lease expires.
import { setMaxListeners } from 'node:events';
import type { Deps } from '../deps.ts';
import { type ClaimedDelivery, claimDue, releaseClaims } from './claims.repository.ts';
import { CompletionWriter } from './completions.ts';
import { type CredentialCache, createCredentialCache } from './credentials.ts';
import { type WebhookMetrics, webhookMetrics } from './metrics.ts';
import type { Notifications } from './notifications.ts';
import { DELIVERIES_CHANNEL } from './outbox.repository.ts';
import { decide } from './retry.ts';
import { type Sender, type SendResult, createSender, originOf } from './sender.ts';
import { deliveryHeaders, userAgent } from './signing.ts';

export interface DispatcherOptions {
  /** most deliveries claimed by one query */
  batchSize?: number;
  /** most deliveries held (in flight or waiting for their lane) by this process; default 512 */
  globalConcurrency?: number;
  /** most requests in flight per target origin */
  perEndpoint?: number;
  /** most jobs one origin may hold (in flight plus waiting); default 32 × perEndpoint */
  laneCapacity?: number;
  /** claim at least this often without a notification (ms) */
  pollIntervalMs?: number;
  /** how long stop() waits for requests in flight before interrupting them (ms) */
  stopGraceMs?: number;
}

export type DispatcherDeps = Pick<Deps, 'db' | 'config' | 'log' | 'cipher' | 'metrics'>;

interface Job {
  row: ClaimedDelivery;
  lane: Lane;
  /** by this time (ms, this process's clock) the claim's lease may have expired */
  leaseEnd: number;
}

interface Lane {
  origin: string;
  active: number;
  queue: Job[];
  /** integration id → jobs of it held in this lane */
  integrations: Map<number, number>;
  /** integrations whose claims overflowed this lane: not claimed until it has room again */
  blocked: Set<number>;
}

/** A wake-up flag with a timeout: wake() before wait() is not lost. */
class Signal {
  private woken = false;
  private resolve: (() => void) | undefined;
  wake(): void {
    if (this.resolve) this.resolve();
    else this.woken = true;
  }
  wait(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((res) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.resolve = undefined;
        res();
      }
      this.resolve = done;
    });
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Dispatcher {
  private readonly batchSize: number;
  private readonly globalCap: number;
  private readonly perEndpoint: number;
  private readonly laneCapacity: number;
  private readonly pollMs: number;
  private readonly stopGraceMs: number;
  private readonly sender: Sender;
  private readonly credentials: CredentialCache;
  private readonly metrics: WebhookMetrics;
  private readonly writer: CompletionWriter;
  private readonly ua: string;
  private readonly signal = new Signal();
  private readonly lanes = new Map<string, Lane>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private held = 0;
  private stopping = false;
  private capacityWait = false;
  private loop: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private unsubscribe: (() => void)[] = [];
  private retryTimer: { at: number; timer: NodeJS.Timeout } | undefined;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly notifications: Notifications | undefined,
    opts: DispatcherOptions = {},
  ) {
    this.batchSize = opts.batchSize ?? 200;
    this.globalCap = opts.globalConcurrency ?? 512;
    this.perEndpoint = opts.perEndpoint ?? 8;
    this.laneCapacity = opts.laneCapacity ?? 32 * this.perEndpoint;
    this.pollMs = opts.pollIntervalMs ?? 1000;
    this.stopGraceMs = opts.stopGraceMs ?? 5000;
    this.sender = createSender({
      allowPrivateNetworks: deps.config.webhookAllowPrivateNetworks,
      maxSocketsPerOrigin: this.perEndpoint,
    });
    this.credentials = createCredentialCache(deps.cipher);
    this.metrics = webhookMetrics(deps.metrics.registry, deps.db);
    this.ua = userAgent(deps.config.publicUrl);
    setMaxListeners(0, this.abort.signal); // one listener per request in flight
    this.writer = new CompletionWriter(deps.db, deps.log, this.metrics, (delayMs) => this.wakeIn(delayMs));
  }

  start(): void {
    if (this.loop) return;
    if (this.notifications) {
      this.unsubscribe.push(
        this.notifications.on(DELIVERIES_CHANNEL, () => this.signal.wake()),
        this.notifications.onConnect(() => this.signal.wake()),
      );
    }
    this.loop = this.run();
  }

  /** Claims now instead of at the next notification or poll. */
  wake(): void {
    this.signal.wake();
  }

  /**
   * Stops claiming, gives back what has not started, waits up to the grace
   * period for requests in flight (then interrupts them), and writes every
   * outcome it has.
   */
  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    if (!this.loop) return;
    this.stopping = true;
    for (const u of this.unsubscribe) u();
    if (this.retryTimer) clearTimeout(this.retryTimer.timer);
    this.signal.wake();
    await this.loop;
    const unstarted: Job[] = [];
    for (const lane of this.lanes.values()) unstarted.push(...lane.queue.splice(0));
    this.held -= unstarted.length;
    await this.release(unstarted.map((j) => j.row));
    const drained = Promise.all([...this.inFlight]);
    const timer = sleep(this.stopGraceMs).then(() => 'timeout' as const);
    if ((await Promise.race([drained, timer])) === 'timeout') {
      this.abort.abort();
      await drained;
    }
    await this.writer.drain(this.stopGraceMs);
    this.sender.close();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const room = this.globalCap - this.held;
      if (room <= 0) {
        this.capacityWait = true;
        await this.signal.wait(this.pollMs);
        continue;
      }
      this.capacityWait = false;
      const limit = Math.min(room, this.batchSize);
      let rows: ClaimedDelivery[];
      // measured before the claim: the leases it gives end no sooner than claimedAt + timeout + margin
      const claimedAt = Date.now();
      try {
        rows = await claimDue(this.deps.db, {
          limit,
          leaseMarginMs: this.deps.config.webhookLeaseMarginMs,
          excludeIntegrations: this.saturatedIntegrations(),
        });
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        failures++;
        if (failures === 1 || failures % 30 === 0) this.deps.log.warn({ err }, 'claiming webhook deliveries failed; retrying');
        await this.signal.wait(Math.min(this.pollMs * failures, 5_000));
        continue;
      }
      if (this.stopping) {
        await this.release(rows);
        break;
      }
      this.accept(rows, claimedAt);
      if (rows.length < limit) await this.signal.wait(this.pollMs);
    }
  }

  /** Integrations whose endpoint already holds as many jobs as it may: not claimed for now. */
  private saturatedIntegrations(): number[] {
    const ids: number[] = [];
    for (const lane of this.lanes.values()) {
      // hysteresis: a lane takes new claims only once it has drained to half its
      // capacity, so a claim brings a useful batch instead of one row (and 199 to give back)
      if (lane.active + lane.queue.length >= this.laneCapacity / 2) ids.push(...lane.integrations.keys(), ...lane.blocked);
    }
    return ids;
  }

  private accept(rows: ClaimedDelivery[], claimedAt: number): void {
    const overflow: ClaimedDelivery[] = [];
    const touched = new Set<Lane>();
    for (const row of rows) {
      const origin = originOf(row.endpoint);
      let lane = this.lanes.get(origin);
      if (!lane) {
        lane = { origin, active: 0, queue: [], integrations: new Map(), blocked: new Set() };
        this.lanes.set(origin, lane);
      }
      // a lane holds a bounded queue; a job that waited too long to start
      // safely within its lease is given back when its turn comes (see pump)
      if (lane.active + lane.queue.length >= this.laneCapacity) {
        overflow.push(row);
        lane.blocked.add(row.integration_id);
        continue;
      }
      lane.queue.push({ row, lane, leaseEnd: claimedAt + row.http_timeout * 1000 + this.deps.config.webhookLeaseMarginMs });
      lane.integrations.set(row.integration_id, (lane.integrations.get(row.integration_id) ?? 0) + 1);
      this.held++;
      touched.add(lane);
    }
    for (const lane of touched) this.pump(lane);
    if (overflow.length) void this.release(overflow);
  }

  private pump(lane: Lane): void {
    const expired: Job[] = [];
    while (lane.active < this.perEndpoint && lane.queue.length > 0) {
      const job = lane.queue.shift()!;
      // an attempt must end (timeout included) before the lease does, with half
      // the lease margin (at most 2 s) to spare
      const spare = Math.min(2_000, this.deps.config.webhookLeaseMarginMs / 2);
      if (Date.now() + job.row.http_timeout * 1000 + spare > job.leaseEnd) {
        expired.push(job);
        continue;
      }
      lane.active++;
      const p = this.attempt(job).finally(() => {
        this.inFlight.delete(p);
        this.finished(job);
      });
      this.inFlight.add(p);
    }
    if (expired.length > 0) {
      for (const job of expired) {
        this.held--;
        const left = (lane.integrations.get(job.row.integration_id) ?? 1) - 1;
        if (left > 0) lane.integrations.set(job.row.integration_id, left);
        else lane.integrations.delete(job.row.integration_id);
      }
      void this.release(expired.map((j) => j.row));
    }
  }

  private finished(job: Job): void {
    const { lane, row } = job;
    const wasSaturated = lane.active + lane.queue.length >= this.laneCapacity / 2;
    lane.active--;
    this.held--;
    const left = (lane.integrations.get(row.integration_id) ?? 1) - 1;
    if (left > 0) lane.integrations.set(row.integration_id, left);
    else lane.integrations.delete(row.integration_id);
    if (!this.stopping) this.pump(lane);
    const open = lane.active + lane.queue.length < this.laneCapacity / 2;
    if (open) lane.blocked.clear();
    if (lane.active === 0 && lane.queue.length === 0) this.lanes.delete(lane.origin);
    // claim again when this lane just reopened (or the process had no room at all)
    if (!this.stopping && (this.capacityWait || (wasSaturated && open))) this.signal.wake();
  }

  private async attempt(job: Job): Promise<void> {
    const { row } = job;
    let result: SendResult;
    try {
      const creds = this.credentials.get({
        integrationId: row.integration_id,
        modifiedAt: row.modified_at,
        authTokenEnc: row.auth_token_enc,
        signingSecretEnc: row.signing_secret_enc,
      });
      result = await this.sender.send({
        url: row.endpoint,
        body: row.body,
        headers: deliveryHeaders(creds, row.webhook_id, row.body, this.ua),
        timeoutMs: row.http_timeout * 1000,
        signal: this.abort.signal,
      });
    } catch (err) {
      // the secrets do not decrypt (TRACKWAY_SECRET_KEY changed?): retried like a network error
      this.deps.log.error({ err, integrationId: row.integration_id }, 'cannot prepare a webhook delivery');
      result = {
        startedAt: new Date(),
        statusCode: null,
        durationMs: 0,
        error: 'the integration secrets cannot be decrypted with the configured TRACKWAY_SECRET_KEY',
        responseExcerpt: null,
        retryAfterMs: null,
        permanent: false,
      };
    }
    this.metrics.attempted.inc({ kind: row.kind });
    const interrupted = this.abort.signal.aborted && result.statusCode === null;
    const outcome = interrupted
      ? ({ kind: 'interrupted', delayMs: 0 } as const)
      : decide(result, row.attempts_count - row.schedule_start, this.deps.config.webhookRetrySchedule);
    this.metrics.attemptDuration.observe(
      { result: outcome.kind === 'delivered' ? '2xx' : outcome.kind === 'failed' ? 'failed' : 'retry' },
      result.durationMs / 1000,
    );
    const lastError = result.error ?? (result.statusCode !== null ? `HTTP ${result.statusCode}` : null);
    this.writer.add(row.kind, {
      orgId: row.org_id,
      id: row.id,
      n: row.attempts_count,
      outcome: outcome.kind,
      delayMs: outcome.kind === 'retry' || outcome.kind === 'interrupted' ? outcome.delayMs : 0,
      lastError: outcome.kind === 'delivered' ? null : lastError,
      attemptedAt: result.startedAt,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error: result.error,
      responseExcerpt: result.responseExcerpt,
      deliveredAt: outcome.kind === 'delivered' ? new Date(result.startedAt.getTime() + result.durationMs) : null,
    });
  }

  private async release(rows: ClaimedDelivery[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await releaseClaims(
        this.deps.db,
        rows.map((r) => ({ orgId: r.org_id, id: r.id, n: r.attempts_count })),
      );
    } catch (err) {
      // their leases expire instead
      this.deps.log.warn({ err, count: rows.length }, 'giving back claimed deliveries failed');
    }
  }

  /** The loop wakes by itself when the soonest retry it scheduled is due (polling covers the rest). */
  private wakeIn(delayMs: number): void {
    if (this.stopping || delayMs > 600_000) return;
    const at = Date.now() + delayMs;
    if (this.retryTimer && this.retryTimer.at <= at) return;
    if (this.retryTimer) clearTimeout(this.retryTimer.timer);
    const timer = setTimeout(() => {
      this.retryTimer = undefined;
      this.signal.wake();
    }, delayMs + 5);
    timer.unref();
    this.retryTimer = { at, timer };
  }
}
