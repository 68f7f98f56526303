// Environment → typed configuration, read and validated once at start.
// A bad value throws ConfigError whose message is a one-line reason.
import path from 'node:path';
import { DEFAULT_SHARE } from './webhooks/fair-share.rules.ts';

export class ConfigError extends Error {}

export interface RateLimit {
  /** requests allowed per window */
  limit: number;
  /** window length in milliseconds */
  windowMs: number;
}

/** Limits on /jsv1 and the learning endpoint (docs/design.md "Trust"); undefined = off. */
export interface TrackingLimits {
  /** requests per client address (an IPv6 address counts by its /64) */
  ip: RateLimit | undefined;
  /** requests per organisation */
  org: RateLimit | undefined;
  /** identifies of an identity not seen in the last 30 minutes, per client address (/jsv1 only) */
  identify: RateLimit | undefined;
  /** the same identifies per IPv6 /48 (a second, coarser budget; IPv4 addresses have only the first) */
  identifyNetwork: RateLimit | undefined;
}

/**
 * Defaults, sized so that a busy shop behind one NAT is never limited (README
 * "Security" works the numbers out): a shopper at its peak sends at most ~20
 * tracking requests a minute and identifies with a new contact at most once
 * in 5 minutes; 300 such shoppers behind one address fit in the per-address
 * budget, 3,000 of one organisation (a sale-day peak) in the per-organisation
 * one. Token buckets: the burst is the whole budget, refilled evenly.
 */
export const DEFAULT_TRACKING_LIMITS: TrackingLimits = {
  ip: { limit: 6_000, windowMs: 60_000 },
  org: { limit: 60_000, windowMs: 60_000 },
  identify: { limit: 60, windowMs: 60_000 },
  identifyNetwork: { limit: 600, windowMs: 60_000 },
};

/** scrypt cost as log2 N (PASSWORD_HASH_COST); 17 is N = 2^17, 128 MiB and ~0.5 s per hash. */
export const DEFAULT_PASSWORD_HASH_COST = 17;

/**
 * Ingest batches being written at once per host (INGEST_IN_FLIGHT): one
 * commits while the next fills, as the durable limit's server does. The
 * workers share it, each with at least one (src/cluster/pool-size.ts
 * workerIngestInFlight): two workers write one batch each, a single process
 * two. More in flight makes smaller batches, which cost PostgreSQL more per
 * event (BENCHMARKS.md, "Batches in flight per host").
 */
export const DEFAULT_INGEST_IN_FLIGHT = 2;

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  /** TRACKWAY_PG_PORT: the embedded PostgreSQL's port on 127.0.0.1 (unset: a free port, kept in the data dir) */
  pgPort: number | undefined;
  publicUrl: string;
  /** PUBLIC_URL was set; otherwise the served document names the address a request reached */
  publicUrlSet: boolean;
  secretKey: string | undefined;
  jwtSecret: string | undefined;
  jwtTtlSeconds: number;
  registrationToken: string | undefined;
  bootstrap: { platform: string; email: string; password: string } | undefined;
  trustProxy: boolean;
  geoipDb: string | undefined;
  webhookAllowPrivateNetworks: boolean;
  /** WEBHOOK_SEND_THREAD: a dispatcher makes its HTTP attempts on a thread of its own (thread-sender.client.ts) */
  webhookSendThread: boolean;
  webhookRetrySchedule: number[];
  /** added to an integration's httpTimeout to make the lease of a claimed delivery (WEBHOOK_LEASE_MARGIN) */
  webhookLeaseMarginMs: number;
  /** WEBHOOK_DISPATCH_SLOT=k/N: this dispatcher claims only organisations whose id modulo N is k */
  webhookDispatchSlot: { index: number; count: number } | undefined;
  /** WEBHOOK_DISPATCH_WORKERS: how many of `serve --workers N`'s workers run a dispatcher (workers 1..k; default 1); undefined = every worker */
  webhookDispatchWorkers: number | undefined;
  /** INGEST_IN_FLIGHT: ingest batches being written at once on this host, shared by its workers (each has at least one) */
  ingestInFlight: number;
  logLevel: string;
  /** failed logins allowed per (email, client address) in a window; undefined = off */
  loginRateLimit: RateLimit | undefined;
  /** failed logins allowed per client address, whatever the emails; undefined = off */
  loginAddressRateLimit: RateLimit | undefined;
  registrationRateLimit: RateLimit | undefined;
  /** per client address, per organisation and for new identities on /jsv1 (and the learning endpoint) */
  trackingLimits: TrackingLimits;
  /** scrypt cost of new password hashes, log2 N (PASSWORD_HASH_COST, 14..20) */
  passwordHashCost: number;
  /** when set, /metrics requires `Authorization: Bearer <METRICS_TOKEN>` */
  metricsToken: string | undefined;
  /** slow clients: a request must send its headers within this (HTTP_HEADERS_TIMEOUT) */
  httpHeadersTimeoutMs: number;
  /** ...and be received completely, body included, within this (HTTP_REQUEST_TIMEOUT) */
  httpRequestTimeoutMs: number;
  /** pending deliveries per integration beyond which new ones are written failed (WEBHOOK_MAX_BACKLOG); undefined = off */
  webhookMaxBacklog: number | undefined;
  /** an endpoint that accepted no delivery for this long is disabled (WEBHOOK_DISABLE_AFTER); undefined = never */
  webhookDisableAfterMs: number | undefined;
  /**
   * how one dispatcher process shares its capacity (src/webhooks/fair-share.rules.ts):
   * requests in flight per integration (WEBHOOK_CONCURRENCY), deliveries held
   * in all (WEBHOOK_DISPATCH_CAPACITY), the part of it kept for organisations
   * holding nothing (WEBHOOK_DISPATCH_RESERVE), the most one organisation may
   * hold even alone (WEBHOOK_ORGANISATION_SHARE, default the rest) and the
   * attempt time beyond which an endpoint gets a smaller lane (WEBHOOK_SLOW_ENDPOINT)
   */
  webhookShare: { perIntegration: number; perOrganisation: number; global: number; reserve: number; slowMs: number };
  eventRetentionDays: number | undefined;
  /** validate every response against the contract and fail loudly on drift */
  validateResponses: boolean;
  /** TRACKWAY_FAST_PATH: well-formed /jsv1 events and identifies answered before Koa (src/http/fast-path.ts) */
  fastPath: boolean;
}

type Env = Record<string, string | undefined>;

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `500ms`, `5s`, `5m`, `2h`, `1d`; a bare number is seconds. */
export function parseDuration(name: string, raw: string): number {
  const m = DURATION.exec(raw.trim());
  if (!m) throw new ConfigError(`${name}: "${raw}" is not a duration (e.g. 500ms, 5s, 5m, 2h, 1d)`);
  return Math.round(Number(m[1]) * UNIT_MS[m[2] ?? 's']!);
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name}: "${raw}" is not a whole number`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name}: ${n} is outside ${min}..${max}`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name}: "${raw}" is not a boolean (true/false)`);
}

function dispatchWorkers(raw: string | undefined): number | undefined {
  if (raw === undefined) return 1;
  if (/^all$/i.test(raw)) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 64)
    throw new ConfigError(`WEBHOOK_DISPATCH_WORKERS: "${raw}" is not a whole number from 1 to 64 (or all)`);
  return Number(raw);
}

function dispatchSlot(raw: string | undefined): Config['webhookDispatchSlot'] {
  if (raw === undefined) return undefined;
  const m = /^(\d+)\/(\d+)$/.exec(raw);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || count > 1024 || index >= count) {
    throw new ConfigError(`WEBHOOK_DISPATCH_SLOT: "${raw}" is not k/N with 0 <= k < N <= 1024`);
  }
  return { index, count };
}

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** `N/window`, e.g. `10/15m`, `100/1s`. */
function rateLimit(env: Env, name: string, def: RateLimit | undefined): RateLimit | undefined {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (/^(off|none|0)$/i.test(raw)) return undefined;
  const m = /^(\d+)\/(.+)$/.exec(raw);
  if (!m) throw new ConfigError(`${name}: "${raw}" is not a rate limit (e.g. 100/1s, 10/15m, or off)`);
  const limit = Number(m[1]);
  if (limit < 1) throw new ConfigError(`${name}: the limit must be at least 1`);
  return { limit, windowMs: parseDuration(name, m[2]!) };
}

/**
 * TRACKING_RATE_LIMIT sets the per-address and per-organisation limits
 * together (`off` turns every tracking limit off); TRACKING_IP_RATE_LIMIT,
 * TRACKING_ORG_RATE_LIMIT, TRACKING_IDENTIFY_RATE_LIMIT and
 * TRACKING_IDENTIFY_NETWORK_RATE_LIMIT set one each and win over it.
 */
function trackingLimits(env: Env): TrackingLimits {
  const all = str(env, 'TRACKING_RATE_LIMIT');
  const allOff = all !== undefined && /^(off|none|0)$/i.test(all);
  const both = allOff ? undefined : rateLimit(env, 'TRACKING_RATE_LIMIT', undefined);
  const pick = (name: string, def: RateLimit | undefined) => rateLimit(env, name, allOff ? undefined : def);
  return {
    ip: pick('TRACKING_IP_RATE_LIMIT', both ?? DEFAULT_TRACKING_LIMITS.ip),
    org: pick('TRACKING_ORG_RATE_LIMIT', both ?? DEFAULT_TRACKING_LIMITS.org),
    identify: pick('TRACKING_IDENTIFY_RATE_LIMIT', DEFAULT_TRACKING_LIMITS.identify),
    identifyNetwork: pick('TRACKING_IDENTIFY_NETWORK_RATE_LIMIT', DEFAULT_TRACKING_LIMITS.identifyNetwork),
  };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = str(env, 'HOST') ?? '0.0.0.0';

  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL: must start with postgres:// or postgresql://');
  }

  const publicUrl = (str(env, 'PUBLIC_URL') ?? `http://localhost:${port}`).replace(/\/+$/, '');
  try {
    const u = new URL(publicUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError(`PUBLIC_URL: "${publicUrl}" is not an absolute http(s) URL`);
  }

  const secretKey = str(env, 'TRACKWAY_SECRET_KEY');
  if (secretKey !== undefined && Buffer.from(secretKey, 'base64').length !== 32 && !/^[0-9a-f]{64}$/i.test(secretKey)) {
    throw new ConfigError('TRACKWAY_SECRET_KEY: must be 32 bytes as 64 hex digits or base64');
  }
  const jwtSecret = str(env, 'JWT_SECRET');
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new ConfigError('JWT_SECRET: must be at least 32 characters');
  }
  const jwtTtlSeconds = Math.round(parseDuration('JWT_TTL', str(env, 'JWT_TTL') ?? '24h') / 1000);
  if (jwtTtlSeconds < 60) throw new ConfigError('JWT_TTL: must be at least 60s');

  const bp = str(env, 'TRACKWAY_BOOTSTRAP_PLATFORM');
  const be = str(env, 'TRACKWAY_BOOTSTRAP_EMAIL');
  const bpw = str(env, 'TRACKWAY_BOOTSTRAP_PASSWORD');
  let bootstrap: Config['bootstrap'];
  if (bp || be || bpw) {
    if (!bp || !be || !bpw) {
      throw new ConfigError('TRACKWAY_BOOTSTRAP_PLATFORM, _EMAIL and _PASSWORD must be set together');
    }
    bootstrap = { platform: bp, email: be, password: bpw };
  }

  const logLevel = str(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL: "${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }

  const schedule = (str(env, 'WEBHOOK_RETRY_SCHEDULE') ?? DEFAULT_RETRY_SCHEDULE)
    .split(',')
    .map((part) => parseDuration('WEBHOOK_RETRY_SCHEDULE', part));
  if (schedule.some((ms) => ms > 7 * 86_400_000)) {
    throw new ConfigError('WEBHOOK_RETRY_SCHEDULE: each step must be at most 7d');
  }

  const httpHeadersTimeoutMs = parseDuration('HTTP_HEADERS_TIMEOUT', str(env, 'HTTP_HEADERS_TIMEOUT') ?? '10s');
  const httpRequestTimeoutMs = parseDuration('HTTP_REQUEST_TIMEOUT', str(env, 'HTTP_REQUEST_TIMEOUT') ?? '30s');
  if (httpHeadersTimeoutMs < 100) throw new ConfigError('HTTP_HEADERS_TIMEOUT: must be at least 100ms');
  if (httpRequestTimeoutMs < httpHeadersTimeoutMs) {
    throw new ConfigError('HTTP_REQUEST_TIMEOUT: must be at least HTTP_HEADERS_TIMEOUT');
  }
  const backlog = str(env, 'WEBHOOK_MAX_BACKLOG');
  const webhookMaxBacklog =
    backlog !== undefined && /^(off|none)$/i.test(backlog) ? undefined : int(env, 'WEBHOOK_MAX_BACKLOG', 100_000, 1, 1_000_000_000);

  const disableAfter = str(env, 'WEBHOOK_DISABLE_AFTER') ?? '5d';
  const webhookDisableAfterMs = /^(off|none)$/i.test(disableAfter) ? undefined : parseDuration('WEBHOOK_DISABLE_AFTER', disableAfter);
  if (webhookDisableAfterMs !== undefined && webhookDisableAfterMs < 1000) {
    throw new ConfigError('WEBHOOK_DISABLE_AFTER: must be at least 1s (or off)');
  }
  const global = int(env, 'WEBHOOK_DISPATCH_CAPACITY', DEFAULT_SHARE.global, 2, 100_000);
  const reserve = int(env, 'WEBHOOK_DISPATCH_RESERVE', Math.min(DEFAULT_SHARE.reserve, Math.floor(global / 8) || 1), 1, 100_000);
  if (reserve >= global) throw new ConfigError('WEBHOOK_DISPATCH_RESERVE: must be less than WEBHOOK_DISPATCH_CAPACITY');
  const webhookShare = {
    perIntegration: int(env, 'WEBHOOK_CONCURRENCY', DEFAULT_SHARE.perIntegration, 1, 1024),
    perOrganisation: int(env, 'WEBHOOK_ORGANISATION_SHARE', global - reserve, 1, 100_000),
    global,
    reserve,
    slowMs: parseDuration('WEBHOOK_SLOW_ENDPOINT', str(env, 'WEBHOOK_SLOW_ENDPOINT') ?? '2s'),
  };
  if (webhookShare.perIntegration > webhookShare.perOrganisation) {
    throw new ConfigError('WEBHOOK_CONCURRENCY: must be at most WEBHOOK_ORGANISATION_SHARE');
  }
  if (webhookShare.perOrganisation > global - reserve) {
    throw new ConfigError('WEBHOOK_ORGANISATION_SHARE: must be at most WEBHOOK_DISPATCH_CAPACITY less WEBHOOK_DISPATCH_RESERVE');
  }
  if (webhookShare.slowMs < 10 || webhookShare.slowMs > 60_000) {
    throw new ConfigError('WEBHOOK_SLOW_ENDPOINT: must be from 10ms to 60s');
  }
  const loginRateLimit = rateLimit(env, 'LOGIN_RATE_LIMIT', { limit: 10, windowMs: 15 * 60_000 });
  const metricsToken = str(env, 'METRICS_TOKEN');
  if (metricsToken !== undefined && (metricsToken.length < 16 || !/^[!-~]+$/.test(metricsToken))) {
    throw new ConfigError('METRICS_TOKEN: must be at least 16 visible ASCII characters (no spaces)');
  }

  const retention = str(env, 'EVENT_RETENTION_DAYS');
  const eventRetentionDays = retention === undefined ? undefined : int(env, 'EVENT_RETENTION_DAYS', 0, 1, 36500);

  return {
    port,
    host,
    databaseUrl,
    dataDir: path.resolve(str(env, 'TRACKWAY_DATA_DIR') ?? '.trackway'),
    pgPort: str(env, 'TRACKWAY_PG_PORT') === undefined ? undefined : int(env, 'TRACKWAY_PG_PORT', 0, 1, 65535),
    publicUrl,
    publicUrlSet: str(env, 'PUBLIC_URL') !== undefined,
    secretKey,
    jwtSecret,
    jwtTtlSeconds,
    registrationToken: str(env, 'REGISTRATION_TOKEN'),
    bootstrap,
    trustProxy: bool(env, 'TRUST_PROXY', false),
    geoipDb: str(env, 'GEOIP_DB'),
    webhookAllowPrivateNetworks: bool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    webhookSendThread: bool(env, 'WEBHOOK_SEND_THREAD', true),
    webhookRetrySchedule: schedule,
    webhookLeaseMarginMs: parseDuration('WEBHOOK_LEASE_MARGIN', str(env, 'WEBHOOK_LEASE_MARGIN') ?? '30s'),
    webhookDispatchSlot: dispatchSlot(str(env, 'WEBHOOK_DISPATCH_SLOT')),
    webhookDispatchWorkers: dispatchWorkers(str(env, 'WEBHOOK_DISPATCH_WORKERS')),
    ingestInFlight: int(env, 'INGEST_IN_FLIGHT', DEFAULT_INGEST_IN_FLIGHT, 1, 64),
    logLevel,
    loginRateLimit,
    // LOGIN_RATE_LIMIT=off turns both login limits off unless this one is set
    loginAddressRateLimit: rateLimit(env, 'LOGIN_ADDRESS_RATE_LIMIT', loginRateLimit ? { limit: 30, windowMs: 15 * 60_000 } : undefined),
    registrationRateLimit: rateLimit(env, 'REGISTRATION_RATE_LIMIT', { limit: 20, windowMs: 3_600_000 }),
    trackingLimits: trackingLimits(env),
    passwordHashCost: int(env, 'PASSWORD_HASH_COST', DEFAULT_PASSWORD_HASH_COST, 14, 20),
    metricsToken,
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    webhookMaxBacklog,
    webhookDisableAfterMs,
    webhookShare,
    eventRetentionDays,
    validateResponses: bool(env, 'TRACKWAY_VALIDATE_RESPONSES', false),
    fastPath: bool(env, 'TRACKWAY_FAST_PATH', true),
  };
}
