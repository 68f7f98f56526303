// The dispatcher: claims due deliveries in rounds (woken by NOTIFY, which
// names the organisations that have new deliveries, with a polling
// fallback), fairly between organisations and integrations and never more
// than each one's share (fair-share.rules.ts, claim-round.service.ts, claims.repository.ts),
// sends them with at most `perIntegration` requests in flight per integration
// (fewer to a slow endpoint; its part of them when one of a host's k, host-split.rules.ts),
// and writes the outcomes back in batches, which also move each endpoint's circuit
// breaker on (circuit-breaker.rules.ts): a paused endpoint's deliveries are not
// claimed, and one failing for WEBHOOK_DISABLE_AFTER is disabled. It owns no state that a
// crash could lose: a claim is a lease in the database, and an attempt whose
// outcome was never written is made again once the lease expires.
import { setMaxListeners } from 'node:events';
import type { Deps } from '../deps.ts';
import { disableFailingEndpoint } from './auto-disable.service.ts';
import { type BreakerOptions, DEFAULT_BREAKER } from './circuit-breaker.rules.ts';
import { claimRound } from './claim-round.service.ts';
import { type ClaimedDelivery, releaseClaims } from './claims.repository.ts';
import { CompletionWriter } from './completions.worker.ts';
import { type CredentialCache, createCredentialCache } from './credentials.service.ts';
import { DEFAULT_SHARE, FairShare, type Job, type Lane } from './fair-share.rules.ts';
import { splitCaps } from './host-split.rules.ts';
import { type WebhookMetrics, boundByLabel, webhookMetrics } from './webhook-metrics.service.ts';
import { DELIVERIES_CHANNEL, type Notifications } from '../db/notifications.ts';
import { parseNotifiedOrganisations } from './outbox.repository.ts';
import { type HealthChange, isFailure } from './outcomes.repository.ts';
import { decide } from './retry.rules.ts';
import { type Sender, type SendResult, createSender, unsentAttempt } from './sender.client.ts';
import { createThreadSender } from './thread-sender.client.ts';
import { Signal } from './signal.rules.ts';
import { deliveryHeaders, userAgent } from './signing.crypto.ts';
import type { OrgId } from '../db/tenancy.ts';

export interface DispatcherOptions {
  /** most deliveries claimed by one statement (for one organisation) */
  batchSize?: number;
  /** most deliveries held (in flight or waiting to start) by this process; default config.webhookShare.global */
  globalConcurrency?: number;
  /** most requests in flight per integration; default config.webhookShare.perIntegration */
  perIntegration?: number;
  /** most deliveries held per organisation; default config.webhookShare.perOrganisation */
  perOrganisation?: number;
  /** part of the capacity kept for organisations holding nothing; default config.webhookShare.reserve */
  reserve?: number;
  /** an endpoint slower than this gets a smaller lane (ms); default config.webhookShare.slowMs */
  slowMs?: number;
  /** claim at least this often without a notification (ms) */
  pollIntervalMs?: number;
  /**
   * how long a small room in a full pool waits to grow before it is claimed anyway, and a backlog's
   * outcomes gather before they are written (ms); default COALESCE_MS
   */
  coalesceMs?: number;
  /** an endpoint faster than this on average (ms) has its next attempts handed to the sender early; default HANDOFF_FAST_MS */
  handoffFastMs?: number;
  /** how long stop() waits for requests in flight before interrupting them (ms) */
  stopGraceMs?: number;
  /** the circuit breaker: failures in a row that pause an endpoint, first and longest pause */
  breaker?: Partial<BreakerOptions>;
  /** dispatcher `index` (0-based) of the host's `count`: it applies its part of each cap above (host-split.rules.ts) */
  split?: { index: number; count: number } | undefined;
}

export type DispatcherDeps = Pick<Deps, 'db' | 'config' | 'log' | 'cipher' | 'metrics'>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * How long the loop lets a nearly full pool (FairShare.poolNearlyFull) grow
 * before it claims anyway, by default (ms). A claim costs about the same
 * whether it brings back one delivery or a hundred
 * (docs/profiles/dispatch-claims-per-statement.md); once a backlog had filled
 * the pool, claiming each slot as an attempt freed it made a claim for every
 * few deliveries. The wait applies only while neither an organisation named
 * by a NOTIFY nor a scan is waiting: new work is claimed at once, from the
 * reserve if need be. A full pool is mostly deliveries waiting to start, so
 * no lane runs dry meanwhile. The same wait gathers a backlog's outcomes
 * before they are written (completions.worker.ts `gather`).
 */
const COALESCE_MS = 10;

/**
 * An endpoint whose attempts take less than this on average (ms) has its
 * next attempts handed to the sending thread before a slot is free
 * (Dispatcher.handoff): for it, the round trip between the threads is a
 * real part of each request's turn.
 */
const HANDOFF_FAST_MS = 25;

/** attempt(): the sender gave the job back without starting it */
const NOT_STARTED = Symbol('not started');

export class Dispatcher {
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly coalesceMs: number;
  private readonly handoffFastMs: number;
  private readonly stopGraceMs: number;
  private readonly share: FairShare;
  private readonly breaker: BreakerOptions;
  private readonly sender: Sender;
  private readonly credentials: CredentialCache;
  private readonly metrics: WebhookMetrics;
  private readonly attempted = boundByLabel((kind) => this.metrics.attempted.labels(kind));
  private readonly attemptDuration = boundByLabel((result) => this.metrics.attemptDuration.labels(result));
  private readonly writer: CompletionWriter;
  private readonly ua: string;
  private readonly signal = new Signal();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly disabling = new Set<number>();
  private readonly shareSource = () => this.share.snapshot();
  private readonly abort = new AbortController();
  /** organisations a NOTIFY named since the last claim round */
  private readonly named = new Set<OrgId>();
  /** the next round scans the database for due work (claim-round.service.ts says when) */
  private scanWanted = true;
  private stopping = false;
  private capacityWait = false;
  /** the loop lets a nearly full pool grow (for coalesceMs): an attempt that ends wakes it only once it is not */
  private roomWait = false;
  private loop: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private unsubscribe: (() => void)[] = [];
  private retryTimer: { at: number; timer: NodeJS.Timeout } | undefined;
  /** rows the sender did not start, given back together (giveBack) */
  private givingBack: ClaimedDelivery[] = [];
  /**
   * Integrations with failed attempts whose outcomes are not yet written, and
   * how many: none of their attempts starts until those are written and what
   * they did to the endpoint's circuit breaker is known (healthChanged), so an
   * endpoint whose breaker they open is sent nothing more meanwhile.
   */
  private readonly unwrittenFailures = new Map<number, number>();
  private givenBack: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly notifications: Notifications | undefined,
    opts: DispatcherOptions = {},
  ) {
    this.batchSize = opts.batchSize ?? 200;
    this.pollMs = opts.pollIntervalMs ?? 1000;
    this.coalesceMs = opts.coalesceMs ?? COALESCE_MS;
    this.handoffFastMs = opts.handoffFastMs ?? HANDOFF_FAST_MS;
    this.stopGraceMs = opts.stopGraceMs ?? 5000;
    const configured = deps.config.webhookShare ?? DEFAULT_SHARE;
    const host = {
      ...DEFAULT_SHARE,
      global: opts.globalConcurrency ?? configured.global,
      perIntegration: opts.perIntegration ?? configured.perIntegration,
      perOrganisation: opts.perOrganisation ?? configured.perOrganisation,
      reserve: opts.reserve ?? configured.reserve,
      slowMs: opts.slowMs ?? configured.slowMs,
    };
    this.share = new FairShare(opts.split ? splitCaps(host, opts.split.index, opts.split.count) : host);
    this.breaker = { ...DEFAULT_BREAKER, ...opts.breaker };
    const senderOptions = {
      allowPrivateNetworks: deps.config.webhookAllowPrivateNetworks,
      // connections are reused per origin, but the caps are per integration and organisation
      maxSocketsPerOrigin: this.share.opts.global,
      maxFreeSocketsPerOrigin: 4 * this.share.opts.perIntegration,
    };
    this.sender = deps.config.webhookSendThread
      ? createThreadSender(senderOptions, (err) => deps.log.error({ err }, 'the webhook sending thread failed; its attempts in flight are retried'))
      : createSender(senderOptions);
    this.credentials = createCredentialCache(deps.cipher);
    this.metrics = webhookMetrics(deps.metrics.registry, deps.db);
    this.metrics.shareSource = this.shareSource;
    this.ua = userAgent(deps.config.publicUrl);
    setMaxListeners(0, this.abort.signal); // one listener per request in flight
    this.writer = new CompletionWriter(deps.db, deps.log, this.metrics, {
      breaker: { ...this.breaker, disableAfterMs: deps.config.webhookDisableAfterMs },
      onRetryScheduled: (delayMs) => this.wakeIn(delayMs),
      onHealth: (changes, resumed) => this.healthChanged(changes, resumed),
      onFailuresWritten: (integrationIds) => this.failuresWritten(integrationIds),
      // a backlog's outcomes are written a pool's part at a time, as it is claimed
      gather: { ms: this.coalesceMs, batch: () => this.share.poolPart(), backlog: () => this.share.holdsBacklog() },
    });
  }

  start(): void {
    if (this.loop) return;
    if (this.notifications) {
      this.unsubscribe.push(
        this.notifications.on(DELIVERIES_CHANNEL, (payload) => this.notified(payload)),
        this.notifications.onConnect(() => this.scanSoon()),
      );
    }
    this.loop = this.run();
  }

  /** Claims now (scanning for due work) instead of at the next notification or poll. */
  wake(): void {
    this.scanSoon();
  }

  private scanSoon(): void {
    this.scanWanted = true;
    this.signal.wake();
  }

  /** New deliveries committed: claim for the organisations named (all of them when none is). */
  private notified(payload: string): void {
    const orgs = parseNotifiedOrganisations(payload);
    if (orgs.length === 0) return this.scanSoon();
    const slot = this.deps.config.webhookDispatchSlot;
    for (const org of orgs) if (!slot || org % slot.count === slot.index) this.named.add(org);
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
    const unstarted = this.share.takeAllWaiting();
    this.share.dropped(unstarted);
    // and what waits in the sender for a slot (it comes back not started)
    this.sender.drop?.();
    await this.release(unstarted.map((j) => j.row));
    const drained = Promise.all([...this.inFlight]);
    const timer = sleep(this.stopGraceMs).then(() => 'timeout' as const);
    if ((await Promise.race([drained, timer])) === 'timeout') {
      this.abort.abort();
      await drained;
    }
    await this.givenBack;
    await this.writer.drain(this.stopGraceMs);
    this.sender.close();
    if (this.metrics.shareSource === this.shareSource) this.metrics.shareSource = undefined;
  }

  private async run(): Promise<void> {
    let failures = 0;
    let coalesced = false;
    // nothing is claimed (leased) before it can be sent: a sending thread loads got first
    await this.sender.ready?.();
    while (!this.stopping) {
      const room = this.share.room();
      if (room.pool + room.reserve <= 0) {
        this.capacityWait = true;
        if (!(await this.signal.wait(this.pollMs))) this.scanWanted = true;
        continue;
      }
      this.capacityWait = false;
      if (!coalesced && this.share.poolNearlyFull() && this.named.size === 0 && !this.scanWanted) {
        // a small room: let it grow a little; the wakes pending are all "room freed"
        coalesced = true;
        this.roomWait = true;
        this.signal.clear();
        await this.signal.wait(this.coalesceMs);
        this.roomWait = false;
        continue;
      }
      coalesced = false;
      const scan = this.scanWanted;
      this.scanWanted = false;
      const started = Date.now();
      let again: boolean;
      try {
        ({ again } = await claimRound(
          this.deps.db,
          this.share,
          {
            limit: room.pool + room.reserve,
            batchSize: this.batchSize,
            leaseMarginMs: this.deps.config.webhookLeaseMarginMs,
            slot: this.deps.config.webhookDispatchSlot,
            scan,
            named: this.named,
          },
          (rows, claimedAt, reserve) => this.accept(rows, claimedAt, reserve),
        ));
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        // what was asked for is asked for again (the organisations named are marked due in the share already)
        this.scanWanted ||= scan;
        failures++;
        if (failures === 1 || failures % 30 === 0) this.deps.log.warn({ err }, 'claiming webhook deliveries failed; retrying');
        await this.signal.wait(Math.min(this.pollMs * failures, 5_000));
        continue;
      }
      const took = Date.now() - started;
      if (!again) {
        if (!(await this.signal.wait(this.pollMs))) this.scanWanted = true;
        // rounds that find little are spaced by their own cost (up to 25 ms, so
        // latency stays low): the database spends at most about half its time on them
        const gap = started + 2 * took - Date.now();
        if (gap > 0 && !this.stopping) await sleep(Math.min(gap, 25));
      }
    }
  }

  private accept(rows: ClaimedDelivery[], claimedAt: number, reserve: boolean): void {
    if (this.stopping) {
      void this.release(rows);
      return;
    }
    this.metrics.statementRows.observe({ statement: 'claim' }, rows.length);
    const touched = new Set<Lane>();
    for (const row of rows) {
      this.metrics.dispatchLag.observe(Math.max(0, claimedAt - row.due_at.getTime()) / 1000);
      const job = this.share.add(row, claimedAt + row.http_timeout * 1000 + this.deps.config.webhookLeaseMarginMs, reserve);
      touched.add(job.lane);
    }
    for (const lane of touched) this.pump(lane);
  }

  private pump(lane: Lane): void {
    // a lane whose part here is 0 (a slow endpoint, host-split.rules.ts) leaves what waits to the host's other dispatchers
    const expired = this.share.laneLimit(lane) === 0 ? this.share.takeWaiting(lane.integrationId) : [];
    if (this.share.dropped(expired) && !this.stopping) this.signal.wake();
    // an attempt must end (timeout included) before the lease does, with half
    // the lease margin (at most 2 s) to spare; a job that waited too long is given back
    const spare = Math.min(2_000, this.deps.config.webhookLeaseMarginMs / 2);
    const cap = this.share.laneLimit(lane);
    if (cap === 0) this.sender.drop?.(lane.integrationId);
    // a failure not yet written holds the lane (unwrittenFailures); failuresWritten pumps it again
    const held = this.unwrittenFailures.has(lane.integrationId);
    const extra = held ? 0 : this.handoff(lane, cap);
    for (let job = held ? undefined : this.share.next(lane, extra); job; job = this.share.next(lane, extra)) {
      if (Date.now() + job.row.http_timeout * 1000 + spare > job.leaseEnd) {
        this.share.finished(job, undefined);
        expired.push(job);
        continue;
      }
      const j = job;
      const p = this.attempt(j, { key: lane.integrationId, cap, startBy: j.leaseEnd - j.row.http_timeout * 1000 - spare })
        .catch(() => undefined)
        .then((durationMs) => {
          this.inFlight.delete(p);
          if (durationMs === NOT_STARTED) this.giveBack(j.row);
          this.finished(j, durationMs === NOT_STARTED ? undefined : durationMs);
        });
      this.inFlight.add(p);
    }
    if (expired.length > 0) void this.release(expired.map((j) => j.row));
  }

  /**
   * Attempts the lane may hand to the sender beyond its requests in flight
   * (`cap`): the sender starts them itself as slots free (Sender.drop,
   * lane-gate.rules.ts), so a fast endpoint's next request does not wait for
   * a round trip between threads. Only a fast endpoint's lane (its attempts
   * under handoffFastMs, HANDOFF_FAST_MS by default, on average) gets them: a slow one's requests take
   * far longer than that round trip, and a job handed over counts as started
   * for the lane's speed (oldestAge). Up to the cap again: twice it in all.
   */
  private handoff(lane: Lane, cap: number): number {
    if (!this.sender.drop || lane.ewmaMs === undefined || lane.ewmaMs >= this.handoffFastMs) return 0;
    return cap;
  }

  /** A job the sender never started goes back to the database (gathered per turn: a dropped lane gives back many at once). */
  private giveBack(row: ClaimedDelivery): void {
    if (this.givingBack.length === 0) {
      const before = this.givenBack;
      const now = new Promise<void>((resolve) =>
        queueMicrotask(() => {
          const rows = this.givingBack;
          this.givingBack = [];
          void this.release(rows).then(resolve);
        }),
      );
      this.givenBack = Promise.all([before, now]).then(() => undefined);
    }
    this.givingBack.push(row);
  }

  private finished(job: Job, durationMs: number | undefined): void {
    const reopened = this.share.finished(job, durationMs);
    if (!this.stopping) this.pump(job.lane);
    // claim again when this made room someone with more due can use (or the process had no room at all),
    // unless the loop is letting a small room grow and it has not yet
    if (!this.stopping && (this.capacityWait || reopened) && (!this.roomWait || !this.share.poolNearlyFull())) this.signal.wake();
  }

  /**
   * Makes one attempt; resolves with its duration (undefined when it was
   * interrupted or never sent), or NOT_STARTED when the sender did not start
   * it (nothing is recorded: the delivery is given back).
   */
  private async attempt(job: Job, lane: { key: number; cap: number; startBy: number }): Promise<number | undefined | typeof NOT_STARTED> {
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
        lane,
      });
      if (result.notStarted) return NOT_STARTED;
    } catch (err) {
      // the secrets do not decrypt (TRACKWAY_SECRET_KEY changed?): retried like a network error
      this.deps.log.error({ err, integrationId: row.integration_id }, 'cannot prepare a webhook delivery');
      const error = 'the integration secrets cannot be decrypted with the configured TRACKWAY_SECRET_KEY';
      result = unsentAttempt(error);
    }
    this.attempted(row.kind).inc();
    const interrupted = this.abort.signal.aborted && result.statusCode === null;
    const outcome = interrupted
      ? ({ kind: 'interrupted', delayMs: 0 } as const)
      : decide(result, row.attempts_count - row.schedule_start, this.deps.config.webhookRetrySchedule);
    const durationLabel = outcome.kind === 'delivered' ? '2xx' : outcome.kind === 'failed' ? 'failed' : 'retry';
    this.attemptDuration(durationLabel).observe(result.durationMs / 1000);
    const lastError = result.error ?? (result.statusCode !== null ? `HTTP ${result.statusCode}` : null);
    if (isFailure(outcome.kind)) this.unwrittenFailures.set(row.integration_id, (this.unwrittenFailures.get(row.integration_id) ?? 0) + 1);
    this.writer.add(
      row.kind,
      {
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
      },
      { integrationId: row.integration_id, probe: row.probe },
    );
    return interrupted ? undefined : result.durationMs;
  }

  /** Failures written (after healthChanged), one id each: a lane whose failures are all written starts attempts again. */
  private failuresWritten(integrationIds: number[]): void {
    for (const id of integrationIds) {
      const left = (this.unwrittenFailures.get(id) ?? 1) - 1;
      if (left > 0) {
        this.unwrittenFailures.set(id, left);
        continue;
      }
      this.unwrittenFailures.delete(id);
      const lane = this.share.laneOf(id);
      if (lane && !this.stopping) this.pump(lane);
    }
  }

  /** What an outcome write changed in endpoints' circuit breakers. */
  private healthChanged(changes: HealthChange[], resumed: { org_id: OrgId; integration_id: number }[]): void {
    const now = Date.now();
    for (const r of resumed)
      this.deps.log.info({ orgId: r.org_id, integrationId: r.integration_id }, 'webhook endpoint resumed: its probe succeeded');
    // what waited for a paused endpoint is due now
    if (resumed.length > 0 && !this.stopping) this.scanSoon();
    for (const h of changes) {
      const ctx = { orgId: h.org_id, integrationId: h.integration_id, failures: h.consecutive_failures, lastError: h.last_error };
      if (h.opened_now) {
        this.metrics.breakerOpened.inc();
        this.deps.log.warn({ ...ctx, pausedUntil: h.paused_until }, 'webhook endpoint paused by its circuit breaker');
      }
      if (h.opened_count > 0 && h.paused_until && h.paused_until.getTime() > now) {
        // what this process still holds for it waits in the database instead
        this.sender.drop?.(h.integration_id);
        const waiting = this.share.takeWaiting(h.integration_id);
        if (waiting.length > 0) {
          if (this.share.dropped(waiting)) this.signal.wake();
          void this.release(waiting.map((j) => j.row));
        }
        this.wakeIn(h.paused_until.getTime() - now);
      }
      const disableAfterMs = this.deps.config.webhookDisableAfterMs;
      if (h.disable_due && disableAfterMs !== undefined && !this.disabling.has(h.integration_id)) {
        this.disabling.add(h.integration_id);
        disableFailingEndpoint(this.deps.db, h.org_id, h.integration_id, disableAfterMs)
          .then((done) => {
            if (!done) return;
            this.metrics.endpointsDisabled.inc();
            this.deps.log.warn({ ...ctx, cancelled: done.cancelled, reason: done.reason }, 'webhook endpoint disabled after failing for too long');
          })
          .catch((err: unknown) =>
            this.deps.log.warn({ err, ...ctx }, 'disabling a failing webhook endpoint failed; tried again at its next failure'),
          )
          .finally(() => this.disabling.delete(h.integration_id));
      }
    }
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

  /** The loop wakes by itself when the soonest retry (or end of a pause) it knows of is due (polling covers the rest). */
  private wakeIn(delayMs: number): void {
    if (this.stopping || delayMs > 600_000) return;
    const at = Date.now() + delayMs;
    if (this.retryTimer && this.retryTimer.at <= at && this.retryTimer.at > Date.now()) return;
    if (this.retryTimer) clearTimeout(this.retryTimer.timer);
    const timer = setTimeout(() => {
      this.retryTimer = undefined;
      this.scanSoon();
    }, delayMs + 5);
    timer.unref();
    this.retryTimer = { at, timer };
  }
}
