// /metrics with several workers. Each worker keeps its own prom-client
// registry; a scrape lands on whichever worker the connection reached, so
// that worker asks the primary, the primary collects every ready worker's
// registry (getMetricsAsJSON) and adds them up with prom-client's
// AggregatorRegistry.aggregate (counters and histograms summed; each gauge by
// its `aggregator`, sum unless it says otherwise), and the asking worker
// answers with the result: one scrape sees the whole host.
import type { Worker } from 'node:cluster';
import client from 'prom-client';
import { isMessage, type MetricsCollect, type MetricsPart, type MetricsRequest, type MetricsResult } from './messages.ts';

const TIMEOUT_MS = 5_000;

interface Collection {
  parts: unknown[][];
  waiting: Set<Worker>;
  finish(err?: Error): void;
}

/** In the primary: answers the workers' metrics requests. */
export class MetricsAggregator {
  private next = 0;
  private readonly collections = new Map<number, Collection>();

  /** @param ready the workers that serve (and so can answer) right now */
  constructor(private readonly ready: () => Worker[]) {}

  /** a message from a worker; true when it was one of ours */
  onMessage(worker: Worker, message: unknown): boolean {
    if (isMessage<MetricsRequest>(message, 'trackway:metrics-request')) {
      const reply = (r: Omit<MetricsResult, 'type' | 'id'>) => {
        if (worker.isConnected()) worker.send({ type: 'trackway:metrics-result', id: message.id, ...r } satisfies MetricsResult);
      };
      this.collect().then(
        (text) => reply({ text }),
        (err: unknown) => reply({ error: (err as Error).message }),
      );
      return true;
    }
    if (isMessage<MetricsPart>(message, 'trackway:metrics-part')) {
      const c = this.collections.get(message.id);
      if (c?.waiting.delete(worker)) {
        c.parts.push(message.metrics);
        if (c.waiting.size === 0) c.finish();
      }
      return true;
    }
    return false;
  }

  /** A worker exited: collections stop waiting for it (its figures leave the sums, as they would on the next scrape). */
  onExit(worker: Worker): void {
    for (const c of this.collections.values()) {
      if (c.waiting.delete(worker) && c.waiting.size === 0) c.finish();
    }
  }

  collect(): Promise<string> {
    const id = ++this.next;
    const workers = this.ready().filter((w) => w.isConnected());
    return new Promise<string>((resolve, reject) => {
      const c: Collection = {
        parts: [],
        waiting: new Set(workers),
        finish: (err) => {
          clearTimeout(timer);
          this.collections.delete(id);
          if (err) reject(err);
          else client.AggregatorRegistry.aggregate(c.parts).metrics().then(resolve, reject);
        },
      };
      const timer = setTimeout(() => {
        const late = [...c.waiting].map((w) => w.process.pid).join(', ');
        c.finish(new Error(`worker process(es) ${late} did not send their metrics within ${TIMEOUT_MS} ms`));
      }, TIMEOUT_MS);
      this.collections.set(id, c);
      if (workers.length === 0) return c.finish();
      for (const w of workers) w.send({ type: 'trackway:metrics-collect', id } satisfies MetricsCollect);
    });
  }
}

/**
 * In a worker: answers the primary's collections with this registry and
 * returns the scrape function /metrics uses (the whole host's figures).
 */
export function clusterScrape(registry: client.Registry): () => Promise<string> {
  new client.Gauge({
    name: 'trackway_cluster_workers',
    help: 'Worker processes whose figures this scrape adds up (each reports 1)',
    registers: [registry],
  }).set(1);
  let next = 0;
  const pending = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  process.on('message', (message: unknown) => {
    if (isMessage<MetricsCollect>(message, 'trackway:metrics-collect')) {
      registry.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: 'trackway:metrics-part', id: message.id, metrics } satisfies MetricsPart),
        () => process.send?.({ type: 'trackway:metrics-part', id: message.id, metrics: [] } satisfies MetricsPart),
      );
    } else if (isMessage<MetricsResult>(message, 'trackway:metrics-result')) {
      const p = pending.get(message.id);
      pending.delete(message.id);
      if (message.text !== undefined) p?.resolve(message.text);
      else p?.reject(new Error(`the primary could not aggregate the metrics: ${message.error ?? 'no answer'}`));
    }
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = ++next;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('the primary did not answer the metrics request'));
      }, TIMEOUT_MS * 2);
      pending.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      });
      process.send?.({ type: 'trackway:metrics-request', id } satisfies MetricsRequest);
    });
}
