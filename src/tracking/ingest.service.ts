// The ingest path: one function takes an identify or an event and resolves
// when it is durable. Behind it, group commit: concurrent submissions are
// written in one transaction (or one statement) per batch, each caller answered after its batch
// commits. A batch that fails is retried item by item, so one bad item fails
// only itself.
//
// While the process is busy (its last batch carried at least half of
// `gather.items`), a batch smaller than `gather.items` waits up to
// `gather.ms` for more to join it, once: a larger batch costs PostgreSQL and
// Node less per item (BENCHMARKS.md, thirteenth stop). A quiet process writes
// at once: its last batch was small.
import client from 'prom-client';
import type { Database } from '../db/database.ts';
import type { Metrics } from '../http/metrics.ts';
import type { Logger } from '../log.ts';
import { isUnavailable, trackingError } from '../http/errors.ts';
import { type BatchDeps, storeBatch } from './batch.service.ts';
import { maintainEventPartitions } from './partitions.worker.ts';
import type { IngestItem } from './ingest.types.ts';

export type { IngestItem } from './ingest.types.ts';

export interface Ingestor {
  submit(item: IngestItem): Promise<void>;
  /** resolves when everything submitted so far is committed or failed */
  drain(): Promise<void>;
}

export interface IngestOptions {
  /** most items in one transaction */
  maxBatch?: number;
  /** transactions in flight at once */
  maxConcurrent?: number;
  /** items waiting for a transaction at most; beyond it submit refuses (503 + Retry-After) instead of holding more memory */
  maxQueued?: number;
  /** while busy, a smaller batch waits up to `ms` for `items` (default GATHER; `items: 0` never waits) */
  gather?: { items: number; ms: number };
}

/**
 * The batch worth waiting for while busy, and the longest wait. At 64
 * connections on two workers a batch carried about 14 items without it,
 * 16–25 with it (the more, the faster the machine); the wait is at most a
 * millisecond added to a request whose batch takes several to commit.
 */
export const GATHER = { items: 24, ms: 1 } as const;

/**
 * Items waiting at most, by default. One waiting item is one request held
 * open (its body, its socket), so the queue is bounded by the clients
 * connected; this bounds it whatever their number. At about 1 KB per item
 * it caps the queue near 10 MB, a few seconds of ingest at full rate.
 */
export const MAX_QUEUED = 10_000;

interface Pending {
  item: IngestItem;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock

function retryable(err: unknown): boolean {
  return RETRYABLE.has((err as { code?: string }).code ?? '');
}

/** What the ingest path needs: built before (and without) the Deps it becomes part of. */
export interface IngestDeps extends BatchDeps {
  db: Database;
  log: Logger;
  metrics: Metrics;
}

export function createIngestor(deps: IngestDeps, opts: IngestOptions = {}): Ingestor {
  const maxBatch = opts.maxBatch ?? 256;
  const maxConcurrent = opts.maxConcurrent ?? 2;
  const maxQueued = opts.maxQueued ?? MAX_QUEUED;
  const gather = opts.gather ?? GATHER;
  const queue: Pending[] = [];
  const batchSize = new client.Histogram({
    name: 'trackway_ingest_batch_size',
    help: 'identifies and events committed per ingest transaction',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [deps.metrics.registry],
  });
  const commitSeconds = new client.Histogram({
    name: 'trackway_ingest_commit_seconds',
    help: 'time to write and commit one ingest batch',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [deps.metrics.registry],
  });
  let inFlight = 0;
  let scheduled = false;
  /** items of the last batch started: at least half of gather.items means busy */
  let lastBatch = 0;
  /** the wait for a batch to grow, while it runs */
  let gathering: NodeJS.Timeout | undefined;
  let idle: (() => void)[] = [];

  async function commit(items: IngestItem[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const stop = commitSeconds.startTimer();
        await storeBatch(deps, deps.db, items);
        stop();
        batchSize.observe(items.length);
        return;
      } catch (err) {
        // no partition for this month yet (maintenance has not run): make it, go again
        if ((err as { code?: string }).code === '23514' && /no partition/i.test(String((err as Error).message)) && attempt < 5) {
          await maintainEventPartitions(deps.db, undefined);
          continue;
        }
        if (!retryable(err) || attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, attempt * 5 + Math.random() * 10));
      }
    }
  }

  async function flush(batch: Pending[]): Promise<void> {
    try {
      await commit(batch.map((p) => p.item));
      for (const p of batch) p.resolve();
    } catch (err) {
      if (batch.length === 1 || isUnavailable(err)) {
        for (const p of batch) p.reject(err);
        return;
      }
      deps.log.warn({ err, size: batch.length }, 'ingest batch failed; retrying its items one by one');
      for (const p of batch) await flush([p]);
    }
  }

  /** Starts batches while there is room; may first let a small one grow (see the top). */
  function pump(): void {
    scheduled = false;
    if (gathering) {
      if (queue.length < gather.items) return;
      clearTimeout(gathering);
      gathering = undefined;
    } else if (inFlight < maxConcurrent && queue.length > 0 && queue.length < gather.items && lastBatch * 2 >= gather.items) {
      gathering = setTimeout(() => {
        gathering = undefined;
        lastBatch = 0; // it has waited once: what is queued goes now
        pump();
      }, gather.ms);
      return;
    }
    while (inFlight < maxConcurrent && queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      lastBatch = batch.length;
      inFlight++;
      void flush(batch).finally(() => {
        inFlight--;
        if (queue.length > 0) pump();
        else if (inFlight === 0) {
          const waiters = idle;
          idle = [];
          for (const w of waiters) w();
        }
      });
    }
  }

  return {
    submit(item) {
      if (queue.length >= maxQueued) {
        return Promise.reject(
          trackingError(503, 'unavailable', `${queue.length} items are waiting to be stored; retry shortly`, { 'Retry-After': '1' }),
        );
      }
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        // let the submissions of this tick join one batch
        if (!scheduled) {
          scheduled = true;
          setImmediate(pump);
        }
      });
    },
    drain() {
      if (inFlight === 0 && queue.length === 0) return Promise.resolve();
      return new Promise((resolve) => idle.push(resolve));
    },
  };
}
