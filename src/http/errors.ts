// Error envelopes: one shape per area, fixed by the contract (openapi/) and docs/design.md.
// Services throw ApiError (built by the factories below); one renderer in the
// Koa app writes it. Anything else becomes a 500 in the area's shape that
// carries only the request id.

export type Area = 'platform' | 'tracking' | 'analytics';

export type ErrorKind =
  | 'validation'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal'
  | 'not_implemented'
  | 'unavailable'
  // only from node's HTTP parser, before a request reaches the app (client-errors.ts)
  | 'request_timeout'
  | 'headers_too_large';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the area bodies carry text in these fields
    super(String(body.message ?? body.reason ?? body.error ?? status));
  }
}

/** Which area a request path belongs to; everything outside /jsv1 and the analytics host is platform. */
export function areaOf(path: string): Area {
  if (path === '/jsv1' || path.startsWith('/jsv1/')) return 'tracking';
  if (path.startsWith('/rest/v1/') || path.startsWith('/api/v1/')) return 'analytics';
  return 'platform';
}

const STATUS: Record<ErrorKind, number> = {
  validation: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  not_implemented: 501,
  unavailable: 503,
  request_timeout: 408,
  headers_too_large: 431,
};

const PLATFORM_CODE: Record<ErrorKind, number> = {
  validation: 4000,
  unauthorized: 4010,
  forbidden: 4030,
  not_found: 4040,
  method_not_allowed: 4050,
  conflict: 4090,
  payload_too_large: 4130,
  unsupported_media_type: 4150,
  rate_limited: 4290,
  internal: 5000,
  not_implemented: 5010,
  unavailable: 5030,
  request_timeout: 4080,
  headers_too_large: 4310,
};

const TRACKING_ERROR: Record<ErrorKind, string> = {
  validation: 'invalid_request',
  unauthorized: 'invalid_request',
  forbidden: 'invalid_request',
  not_found: 'not_found',
  method_not_allowed: 'method_not_allowed',
  conflict: 'invalid_request',
  payload_too_large: 'payload_too_large',
  unsupported_media_type: 'unsupported_media_type',
  rate_limited: 'rate_limited',
  internal: 'internal_error',
  not_implemented: 'not_implemented',
  unavailable: 'unavailable',
  request_timeout: 'request_timeout',
  headers_too_large: 'headers_too_large',
};

const ANALYTICS_CODE: Record<ErrorKind, number> = {
  validation: 5100,
  unauthorized: 5100,
  forbidden: 5100,
  not_found: 5105,
  method_not_allowed: 5105,
  conflict: 5100,
  payload_too_large: 5113,
  unsupported_media_type: 5115,
  rate_limited: 5129,
  internal: 5500,
  not_implemented: 5101,
  unavailable: 5503,
  request_timeout: 5108,
  headers_too_large: 5131,
};

export interface FieldError {
  path: string;
  message: string;
}

/** Platform API: `{code, message[, errors]}`. */
export function platformError(status: number, code: number, message: string, errors?: FieldError[]): ApiError {
  return new ApiError(status, errors ? { code, message, errors } : { code, message });
}

/** Tracking API: `{error, message}`. */
export function trackingError(status: number, error: string, message: string, headers?: Record<string, string>): ApiError {
  return new ApiError(status, { error, message }, headers);
}

/** Analytics host, learning events and input errors: `{status: "failed", code, reason}`. */
export function analyticsFailure(status: number, code: number, reason: string): ApiError {
  return new ApiError(status, { status: 'failed', code, reason });
}

/** Analytics host, registration outcomes: `{status: "error", message}`. */
export function analyticsError(status: number, message: string): ApiError {
  return new ApiError(status, { status: 'error', message });
}

/** A generic failure in the shape of the given area. */
export function areaError(
  area: Area,
  kind: ErrorKind,
  message: string,
  opts: { errors?: FieldError[]; headers?: Record<string, string> } = {},
): ApiError {
  const status = STATUS[kind];
  let err: ApiError;
  if (area === 'tracking') err = trackingError(status, TRACKING_ERROR[kind], message);
  else if (area === 'analytics') err = analyticsFailure(status, ANALYTICS_CODE[kind], message);
  else err = platformError(status, PLATFORM_CODE[kind], message, opts.errors);
  Object.assign(err.headers, opts.headers ?? {});
  return err;
}

/**
 * Errors that mean "the database is not reachable right now": answered 503 +
 * Retry-After. What pg and pg-pool throw when PostgreSQL stops or restarts:
 * ECONNREFUSED (nothing listens; an AggregateError of them when a host name
 * resolves to several addresses), 57P01 "terminating connection due to
 * administrator command" (a fast shutdown), 57P02/57P03 (crash, starting up or
 * shutting down), "Connection terminated unexpectedly" (a query in flight
 * when the server went away), "timeout exceeded when trying to connect" (no
 * pool slot within the connect timeout), "Connection terminated due to
 * connection timeout" (the pool's new connection timed out), "timeout expired"
 * (a client's), and "Client has encountered a connection error and is not
 * queryable". test/reliability/db-restart.test.ts makes pg throw each of them.
 */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string; errors?: unknown[] } | undefined;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code)) {
    return true;
  }
  // 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 53300 too many connections, class 08 connection exceptions
  if (/^(57P0[123]|53300|08...)$/.test(code)) return true;
  if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isUnavailable)) return true;
  const msg = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Client has encountered a connection error|Client was closed and is not queryable/i.test(
    msg,
  );
}

/**
 * PostgreSQL refusing a value the client sent: a NUL character in text or
 * jsonb (22021 character_not_in_repertoire, 22P05 untranslatable_character),
 * JSON nested too deeply for it (54001 statement_too_complex), or a number
 * out of its column's range (22003). The body guard and the contract refuse
 * these before they get here; this is the backstop (400).
 */
export function isRejectedInput(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === '22021' || code === '22P05' || code === '54001' || code === '22003';
}

/** 503 in the area's shape with Retry-After: the database cannot be reached right now. */
export function unavailableError(area: Area): ApiError {
  return areaError(area, 'unavailable', 'The database is unavailable; retry shortly', { headers: { 'Retry-After': '5' } });
}
