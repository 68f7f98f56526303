// One HTTP attempt of a webhook: got over a keep-alive agent per target
// origin, no redirects, no retries of its own (the outbox owns retries), a
// hard timeout, the private-address guard on the address actually connected
// to, and at most the first 1 KB of the response kept.
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import got, { type Got, Options } from 'got';
import { parseRetryAfter } from './retry.rules.ts';
import { REFUSED_CODE, checkUrlHost, guardedLookup } from './ssrf.client.ts';

export const EXCERPT_BYTES = 1024;
/** a body beyond this is not read further (the attempt's status is already known) */
const DRAIN_LIMIT = 64 * 1024;
/** agents of origins unused this long are closed */
const AGENT_IDLE_MS = 120_000;

export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** aborts the attempt (a stopping dispatcher) */
  signal?: AbortSignal;
  /**
   * the integration's cap, for a sender that may be handed more than it
   * (one with Sender.drop): started once fewer than `cap` of the lane's are in
   * flight, and not at all after `startBy` (ms since the epoch)
   */
  lane?: { key: number; cap: number; startBy: number };
}

export interface SendResult {
  startedAt: Date;
  statusCode: number | null;
  durationMs: number;
  /** why no (complete) response arrived; null otherwise */
  error: string | null;
  responseExcerpt: string | null;
  retryAfterMs: number | null;
  /** the target itself is unusable (a refused address, a malformed URL): never retried */
  permanent: boolean;
  /** never started (its lane was dropped, or its `startBy` passed while it waited): not an attempt, the delivery is given back */
  notStarted?: true;
}

export interface SenderOptions {
  allowPrivateNetworks: boolean;
  /**
   * sockets per origin: a bound, not the unit of sharing (the dispatcher caps
   * requests per integration and per organisation, so two tenants of one
   * receiver do not share one small cap)
   */
  maxSocketsPerOrigin: number;
  /** idle keep-alive sockets kept per origin */
  maxFreeSocketsPerOrigin: number;
}

export interface Sender {
  send(req: SendRequest): Promise<SendResult>;
  close(): void;
  /** resolves once attempts start as soon as they are sent (a sender on another thread: once it has loaded) */
  ready?(): Promise<void>;
  /**
   * Present on a sender that applies each request's `lane` cap itself, so the
   * dispatcher may hand it a lane's next attempts before a slot is free
   * (lane-gate.rules.ts): what waits for a slot in the lane (every lane when
   * none is named) ends `notStarted`.
   */
  drop?(lane?: number): void;
}

/** scheme://host:port of a URL, the key of its keep-alive agent. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid:';
  }
}

/** An attempt that got no response and took no time (it was never sent, or its sender failed): `error` says why; retried. */
export function unsentAttempt(error: string): SendResult {
  return { startedAt: new Date(), statusCode: null, durationMs: 0, error, responseExcerpt: null, retryAfterMs: null, permanent: false };
}

/** The result of a request that was handed over but never started (SendResult.notStarted). */
export function notStarted(): SendResult {
  return { ...unsentAttempt('not started'), notStarted: true };
}

/** what an attempt records when its signal aborted it (a stopping dispatcher) */
export const INTERRUPTED_ERROR = 'interrupted: the dispatcher stopped before the endpoint answered';

const PERMANENT_CODES = new Set([REFUSED_CODE, 'ERR_INVALID_URL', 'ERR_UNSUPPORTED_PROTOCOL']);

function excerpt(chunks: Buffer[]): string {
  // PostgreSQL text cannot hold NUL
  return Buffer.concat(chunks).toString('utf8').replaceAll('\u0000', '\uFFFD');
}

/**
 * The options every attempt to one origin with one timeout starts from
 * (each request merges only its body and headers into them): a streamed
 * POST over the origin's agents, with `client`'s defaults.
 *
 * Their `cacheOptions` are emptied (we use no HTTP cache: they are four
 * undefined settings). got builds node's request options per request as
 * `{ ...cacheOptions, …34 properties }`, and on Node 20's V8 an object
 * literal that spreads a non-empty object before that many properties costs
 * about 80 µs and 23 KB (an empty one: under 1 µs). Emptied, the raw got
 * loop went from 4,300–5,600 to 7,400–7,800 requests/s (BENCHMARKS.md, sixth
 * stop). got's setter, outside a merge, replaces the object, and every
 * request's options copy it from these.
 */
export function preparedOptions(client: Got, timeoutMs: number, agent: { http: http.Agent; https: https.Agent }): Options {
  const o = new Options({ method: 'POST', isStream: true, timeout: { request: timeoutMs }, agent }, undefined, client.defaults.options);
  o.cacheOptions = {};
  return o;
}

/** endpoint URLs whose check is kept (the sender forgets them all past this, and at every idle sweep) */
const MAX_TARGETS = 10_000;

/** The origin of an endpoint URL (its agent's key), or the error an attempt to it ends with. */
function parseTarget(endpoint: string): string | Error {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch (err) {
    // Node's own error (code ERR_INVALID_URL, message "Invalid URL") is what attempts record
    return (err as { code?: string }).code ? (err as Error) : Object.assign(new Error(`invalid endpoint URL`), { code: 'ERR_INVALID_URL' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Object.assign(new Error(`unsupported protocol ${url.protocol} (http or https only)`), { code: 'ERR_UNSUPPORTED_PROTOCOL' });
  }
  return url.origin;
}

export function createSender(opts: SenderOptions): Sender {
  interface Agents {
    http: http.Agent;
    https: https.Agent;
    usedAt: number;
    /** got options prepared per timeout: building them per request is most of got's cost */
    prepared: Map<number, Options>;
  }
  const agents = new Map<string, Agents>();
  /** each endpoint URL checked once: its origin, or why it cannot be sent to (cleared with idle agents) */
  const targets = new Map<string, string | Error>();
  function checkedTarget(endpoint: string): string | Error {
    let t = targets.get(endpoint);
    if (t === undefined) {
      t = parseTarget(endpoint);
      if (targets.size >= MAX_TARGETS) targets.clear();
      targets.set(endpoint, t);
    }
    return t;
  }
  const agentOptions = {
    keepAlive: true,
    keepAliveMsecs: 1000,
    maxSockets: opts.maxSocketsPerOrigin,
    maxFreeSockets: opts.maxFreeSocketsPerOrigin,
    scheduling: 'lifo' as const,
    timeout: 30_000,
  };
  function agentsFor(origin: string): Agents {
    let a = agents.get(origin);
    if (!a) {
      a = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions), usedAt: 0, prepared: new Map() };
      agents.set(origin, a);
    }
    a.usedAt = Date.now();
    return a;
  }
  const sweeper = setInterval(() => {
    targets.clear();
    const cutoff = Date.now() - AGENT_IDLE_MS;
    for (const [origin, a] of agents) {
      if (a.usedAt < cutoff) {
        a.http.destroy();
        a.https.destroy();
        agents.delete(origin);
      }
    }
  }, AGENT_IDLE_MS / 2);
  sweeper.unref();

  const client: Got = got.extend({
    followRedirect: false,
    retry: { limit: 0 },
    throwHttpErrors: false,
    decompress: true,
    http2: false,
    ...(opts.allowPrivateNetworks
      ? {}
      : {
          dnsLookup: guardedLookup as never,
          hooks: { beforeRequest: [(o) => checkUrlHost(o.url as URL)] },
        }),
  });
  function prepared(a: Agents, timeoutMs: number): Options {
    let o = a.prepared.get(timeoutMs);
    if (!o) {
      o = preparedOptions(client, timeoutMs, { http: a.http, https: a.https });
      a.prepared.set(timeoutMs, o);
    }
    return o;
  }

  return {
    send(req) {
      const startedAt = new Date();
      const t0 = performance.now();
      return new Promise<SendResult>((resolve) => {
        let statusCode: number | null = null;
        let retryAfter: string | undefined;
        const chunks: Buffer[] = [];
        let kept = 0;
        let seen = 0;
        let settled = false;
        let stream: ReturnType<Got['stream']> | undefined;

        const finish = (err?: unknown) => {
          if (settled) return;
          settled = true;
          req.signal?.removeEventListener('abort', onAbort);
          const e = err as { code?: string; message?: string } | undefined;
          const retryAfterMs = parseRetryAfter(retryAfter);
          resolve({
            startedAt,
            statusCode,
            durationMs: Math.max(0, Math.round(performance.now() - t0)),
            error: e ? (e.message ?? String(err)).slice(0, 500) : null,
            responseExcerpt: statusCode === null ? null : excerpt(chunks),
            retryAfterMs: retryAfterMs ?? null,
            permanent: statusCode === null && PERMANENT_CODES.has(e?.code ?? ''),
          });
        };
        const onAbort = () => {
          const err = new Error(INTERRUPTED_ERROR);
          stream?.destroy(err);
          finish(err);
        };
        if (req.signal?.aborted) return onAbort();
        req.signal?.addEventListener('abort', onAbort);

        const target = checkedTarget(req.url);
        if (typeof target !== 'string') return finish(target);
        const a = agentsFor(target);
        try {
          // got(url, options, defaults): only the body and headers are merged per request (got parses the URL itself)
          const request = client as unknown as (u: string, o: object, d: Options) => ReturnType<Got['stream']>;
          stream = request(req.url, { body: req.body, headers: req.headers }, prepared(a, req.timeoutMs));
        } catch (err) {
          return finish(err);
        }
        stream.on('response', (res: http.IncomingMessage) => {
          statusCode = res.statusCode ?? null;
          retryAfter = res.headers['retry-after'];
        });
        stream.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (kept < EXCERPT_BYTES) {
            const part = chunk.subarray(0, EXCERPT_BYTES - kept);
            chunks.push(part);
            kept += part.length;
          }
          if (seen > DRAIN_LIMIT) {
            stream.destroy();
            finish();
          }
        });
        stream.on('end', () => finish());
        stream.on('error', (err: unknown) => finish(err));
        stream.on('close', () => finish(statusCode === null ? new Error('the connection closed without a response') : undefined));
      });
    },
    close() {
      clearInterval(sweeper);
      for (const a of agents.values()) {
        a.http.destroy();
        a.https.destroy();
      }
      agents.clear();
    },
  };
}
