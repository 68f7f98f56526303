// The privacy runner (README "Privacy"): runs queued erase and export
// requests in the background, redacts finished erasure notices, deletes
// expired export results, and applies visitor retention. It runs in the
// processes that run the periodic jobs or a dispatcher (src/server.ts);
// several at once are safe: a request is claimed with FOR UPDATE SKIP LOCKED
// under a lease that every step renews (requests.repository.ts), retention
// runs take turns on an advisory lock, and redaction is idempotent.
//
// Woken by NOTIFY when a request is queued (`trackway_privacy`, on the
// process's LISTEN connection) and by a sweep every `sweepMs`, which also
// finds requests whose runner died (their lease expired) and whatever a lost
// notification left behind. One request at a time per process.
import type { Logger } from '../log.ts';
import { type Notifications, PRIVACY_CHANNEL } from '../db/notifications.ts';
import { redactAllFinishedNotices } from '../webhooks/erased-notices.service.ts';
import { whileHoldingRetentionLock } from './locks.repository.ts';
import { type RunDeps, runClaimed } from './request-run.service.ts';
import { claimNext, dropExpiredResults, dueOrganisations, organisationsWithExpiredResults } from './requests.repository.ts';
import { applyRetention } from './retention.service.ts';

export interface PrivacyRunnerOptions {
  /** run erase and export requests (default true) */
  requests?: boolean;
  /** apply visitor retention every `retentionMs` (default true; where the periodic jobs run) */
  retention?: boolean;
  /** a claim's lease, renewed by every step of an erasure (default 60 s) */
  leaseMs?: number;
  /** the sweep's interval (default 10 s): due requests, finished notices to redact, expired exports */
  sweepMs?: number;
  /** how often retention runs (default hourly, and once at start) */
  retentionMs?: number;
  /** rows per erasure step (default 1000) */
  batch?: number;
}

export class PrivacyRunner {
  private stopping = false;
  private draining: Promise<void> | undefined;
  private again = false;
  private retaining: Promise<void> | undefined;
  private sweeping: Promise<void> | undefined;
  /** the sweep asked for while one ran: it starts when that one ends */
  private nextSweep: Promise<void> | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly unsubscribe: (() => void)[] = [];
  private readonly log: Logger;

  constructor(
    private readonly deps: RunDeps,
    private readonly opts: PrivacyRunnerOptions = {},
  ) {
    this.log = deps.log;
  }

  start(notifications?: Notifications): void {
    const requests = this.opts.requests !== false;
    if (requests && notifications) {
      this.unsubscribe.push(notifications.on(PRIVACY_CHANNEL, () => this.wake()));
      this.unsubscribe.push(notifications.onConnect(() => this.wake()));
    }
    const sweep = setInterval(() => void this.sweep(), this.opts.sweepMs ?? 10_000);
    sweep.unref();
    this.timers.push(sweep);
    if (requests) this.wake();
    if (this.opts.retention !== false) {
      const retention = setInterval(() => void this.retain(), this.opts.retentionMs ?? 3_600_000);
      retention.unref();
      this.timers.push(retention);
      void this.retain();
    }
  }

  /** Runs due requests now (or right after the current pass). */
  wake(): void {
    if (this.stopping || this.opts.requests === false) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain()
      .catch((err: unknown) => this.log.warn({ err }, 'privacy requests could not be claimed; retrying at the next sweep'))
      .finally(() => {
        this.draining = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Resolves once the current pass (if any) is over: for tests and the CLI. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /**
   * One sweep that starts after this call: due requests, finished erasure
   * notices, expired export results. A sweep already running may have read
   * before what the caller changed, so a call during one is answered by the
   * next (one at most waits behind the running one).
   */
  sweep(): Promise<void> {
    if (this.sweeping) {
      this.nextSweep ??= this.sweeping.then(() => {
        this.nextSweep = undefined;
        return this.stopping ? undefined : this.sweep();
      });
      return this.nextSweep;
    }
    this.sweeping = (async () => {
      try {
        this.wake();
        const redacted = await redactAllFinishedNotices(this.deps.db);
        if (redacted > 0) this.log.info({ redacted }, 'erasure notices redacted');
        const now = new Date();
        for (const orgId of await organisationsWithExpiredResults(this.deps.db, now, 100)) await dropExpiredResults(this.deps.db, orgId, now);
      } catch (err) {
        this.log.warn({ err }, 'privacy sweep failed; retrying at the next one');
      }
    })().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /** One retention run (skipped while another process runs one). */
  retain(): Promise<void> {
    this.retaining ??= (async () => {
      try {
        const run = await whileHoldingRetentionLock(this.deps.db, () =>
          applyRetention(this.deps, { batch: this.opts.batch, stopping: () => this.stopping }),
        );
        for (const { orgId, counts } of run?.erased ?? []) this.log.info({ org: orgId, ...counts }, 'visitor retention erased');
      } catch (err) {
        if (!this.stopping) this.log.warn({ err: { name: (err as Error)?.name } }, 'visitor retention failed; retrying within the hour');
      }
    })().finally(() => (this.retaining = undefined));
    return this.retaining;
  }

  /** Stops claiming; a request being run stops after its current step and is handed back. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    for (const off of this.unsubscribe) off();
    await Promise.all([this.draining, this.retaining, this.sweeping, this.nextSweep]);
  }

  private async drain(): Promise<void> {
    const { leaseMs = 60_000, batch } = this.opts;
    for (;;) {
      if (this.stopping) return;
      const now = new Date();
      const orgs = await dueOrganisations(this.deps.db, now, 20);
      let ran = false;
      for (const orgId of orgs) {
        if (this.stopping) return;
        const claim = await claimNext(this.deps.db, orgId, new Date(), new Date(Date.now() + leaseMs));
        if (!claim) continue;
        ran = true;
        await runClaimed(this.deps, claim, { leaseMs, batch, stopping: () => this.stopping });
      }
      if (!ran) return;
    }
  }
}
