// Writes attempt outcomes back in batches: outcomes that arrive while a write
// is running go into the next one (group commit). While the dispatcher works
// a backlog (`gather`), a write first lets outcomes gather for up to a few
// milliseconds, until a batch worth the statement has ended: without it, a
// backlog to a fast receiver was written some 8 outcomes a statement, each
// statement costing the dispatcher's thread about as much Node time as
// several attempts (BENCHMARKS.md, twelfth stop). A few outcomes, or any
// outside a backlog, are written at once. The same statement moves each
// endpoint's circuit breaker on (circuit-breaker.rules.ts). A
// failed write is retried with backoff; if the process dies first, the
// leases expire and the deliveries are attempted again (at least once).
import type { Database } from '../db/database.ts';
import type { Logger } from '../log.ts';
import { summarise } from './circuit-breaker.rules.ts';
import type { WebhookMetrics } from './webhook-metrics.service.ts';
import {
  type BreakerSettings,
  type Completion,
  type CompletionResult,
  type HealthChange,
  completeAttempts,
  isFailure,
} from './outcomes.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

const MAX_BATCH = 1000;

interface Entry {
  kind: 'matched' | 'event';
  completion: Completion;
  endpoint: EndpointRef;
  /** Date.now() at which a retry is due */
  dueAt: number;
}

export interface EndpointRef {
  integrationId: number;
  /** the attempt was its circuit breaker's half-open probe */
  probe: boolean;
}

export interface CompletionWriterOptions {
  breaker: BreakerSettings;
  /** told the soonest retry delay of each written batch */
  onRetryScheduled: (delayMs: number) => void;
  /** told what each batch changed in endpoints' circuit breakers (failing ones, and those it closed) */
  onHealth: (changes: HealthChange[], resumed: CompletionResult['resumed']) => void;
  /** told, after onHealth, the integration of each failed attempt (isFailure) a batch wrote, when it wrote any */
  onFailuresWritten?: (integrationIds: number[]) => void;
  /**
   * Outcomes gathered before a write while `backlog()` says one is being
   * worked: for up to `ms`, or until `batch()` are queued. Without it every
   * write starts at once.
   */
  gather?: { ms: number; batch: () => number; backlog: () => boolean };
}

export class CompletionWriter {
  private queue: Entry[] = [];
  private writing: Promise<void> | undefined;
  private giveUpAt = Infinity;
  /** ends the current gathering wait (a batch is queued, or the writer drains) */
  private gathered: (() => void) | undefined;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly metrics: WebhookMetrics,
    private readonly opts: CompletionWriterOptions,
  ) {}

  add(kind: 'matched' | 'event', completion: Completion, endpoint: EndpointRef): void {
    this.queue.push({ kind, completion, endpoint, dueAt: Date.now() + completion.delayMs });
    if (this.gathered && this.queue.length >= this.opts.gather!.batch()) this.gathered();
    this.writing ??= this.writeAll().finally(() => {
      this.writing = undefined;
    });
  }

  /** Waits until everything queued is written, or gives up after `ms`. */
  async drain(ms: number): Promise<void> {
    this.giveUpAt = Date.now() + ms;
    this.gathered?.();
    while (this.writing) await this.writing;
  }

  /** While a backlog is worked and a batch has not yet ended, lets outcomes gather (up to gather.ms). */
  private gather(): Promise<void> | undefined {
    const g = this.opts.gather;
    if (!g || this.giveUpAt !== Infinity || this.queue.length >= g.batch() || !g.backlog()) return undefined;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.gathered?.(), g.ms);
      this.gathered = () => {
        clearTimeout(timer);
        this.gathered = undefined;
        resolve();
      };
    });
  }

  private async writeAll(): Promise<void> {
    let failures = 0;
    while (this.queue.length > 0) {
      await this.gather();
      const batch = this.queue.splice(0, MAX_BATCH);
      const now = Date.now();
      for (const e of batch) e.completion.delayMs = Math.max(0, e.dueAt - now);
      // an interrupted attempt (this dispatcher stopping) says nothing about the endpoint
      const endpoints = summarise(
        batch
          .filter((e) => e.completion.outcome !== 'interrupted')
          .map((e) => ({
            orgId: e.completion.orgId,
            integrationId: e.endpoint.integrationId,
            ok: e.completion.outcome === 'delivered',
            attemptedAt: e.completion.attemptedAt,
            durationMs: e.completion.durationMs,
            error: e.completion.lastError,
            probe: e.endpoint.probe,
          })),
      );
      try {
        const result = await completeAttempts(
          this.db,
          batch.map((e) => e.completion),
          endpoints,
          this.opts.breaker,
        );
        failures = 0;
        this.observeStatements(batch);
        this.count(batch, result.applied);
        if (result.health.length > 0 || result.resumed.length > 0) this.opts.onHealth(result.health, result.resumed);
        if (this.opts.onFailuresWritten) {
          const failed: number[] = [];
          for (const e of batch) if (isFailure(e.completion.outcome)) failed.push(e.endpoint.integrationId);
          if (failed.length > 0) this.opts.onFailuresWritten(failed);
        }
      } catch (err) {
        failures++;
        if (Date.now() >= this.giveUpAt) {
          this.log.warn({ err, count: batch.length + this.queue.length }, 'dropping webhook outcomes at shutdown; their leases will expire');
          this.queue = [];
          return;
        }
        if (failures === 1 || failures % 20 === 0) this.log.warn({ err, count: batch.length }, 'writing webhook outcomes failed; retrying');
        this.queue.unshift(...batch);
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** failures, 5_000)));
      }
    }
  }

  /** outcomes per statement: completeAttempts writes one per organisation of the batch */
  private observeStatements(batch: Entry[]): void {
    const perOrganisation = new Map<OrgId, number>();
    for (const e of batch) perOrganisation.set(e.completion.orgId, (perOrganisation.get(e.completion.orgId) ?? 0) + 1);
    for (const n of perOrganisation.values()) this.metrics.statementRows.observe({ statement: 'outcome' }, n);
  }

  private count(batch: Entry[], applied: { id: number; status: string }[]): void {
    const status = new Map(applied.map((a) => [a.id, a.status]));
    let soonest = Infinity;
    for (const e of batch) {
      const c = e.completion;
      const s = status.get(c.id);
      if (s === undefined) {
        // claimed again elsewhere after this lease expired: that attempt's outcome wins
        this.log.warn({ deliveryId: c.id, attempt: c.n }, 'a webhook outcome arrived after its lease expired; discarded');
        continue;
      }
      if (c.outcome === 'delivered') this.metrics.succeeded.inc({ kind: e.kind });
      else if (s === 'failed') {
        this.metrics.failed.inc({ kind: e.kind });
        this.log.info({ deliveryId: c.id, attempts: c.n, error: c.lastError }, 'webhook delivery failed for good');
      } else if (c.outcome === 'retry' && s === 'pending') {
        this.metrics.retried.inc({ kind: e.kind });
        soonest = Math.min(soonest, c.delayMs);
      }
    }
    if (soonest !== Infinity) this.opts.onRetryScheduled(soonest);
  }
}
