// What the primary and its workers tell each other over the cluster's IPC
// channel. Every message carries a `type` starting with `trackway:`, so
// node's and prom-client's own messages pass by untouched.

/** worker → primary: loaded and listening for its start message */
export interface HelloMessage {
  type: 'trackway:hello';
}

/** primary → worker: what to run */
export interface StartMessage {
  type: 'trackway:start';
  /** 1..N; a restarted worker keeps its number */
  worker: number;
  databaseUrl: string;
  poolSize: number;
  /** ingest batches written at once by this worker (its share of INGEST_IN_FLIGHT: workerIngestInFlight) */
  ingestInFlight: number;
  /** a webhook dispatcher runs here (workers 1..k: WEBHOOK_DISPATCH_WORKERS, default 1, unless --no-dispatcher) */
  dispatcher: boolean;
  /** k: the host's dispatchers, which split its caps (src/webhooks/host-split.rules.ts) */
  dispatchers: number;
  /** the periodic jobs run here: partition maintenance, the webhook backlog counter (worker 1) */
  jobs: boolean;
}

/** worker → primary: serving HTTP */
export interface ReadyMessage {
  type: 'trackway:ready';
}

/** worker → primary: a scrape of /metrics arrived; please aggregate */
export interface MetricsRequest {
  type: 'trackway:metrics-request';
  id: number;
}

/** primary → every ready worker: send your metrics */
export interface MetricsCollect {
  type: 'trackway:metrics-collect';
  id: number;
}

/** worker → primary: its registry as prom-client's getMetricsAsJSON() */
export interface MetricsPart {
  type: 'trackway:metrics-part';
  id: number;
  metrics: unknown[];
}

/** primary → the asking worker: the aggregated exposition text, or why not */
export interface MetricsResult {
  type: 'trackway:metrics-result';
  id: number;
  text?: string;
  error?: string;
}

export function isMessage<T extends { type: string }>(m: unknown, type: T['type']): m is T {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === type;
}
