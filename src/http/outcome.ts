// What happens to a request's outcome, whichever path answered it (the Koa
// app, src/http/app.ts, or the fast path, src/http/fast-path.ts): an error
// thrown anywhere becomes the area's ApiError (with the request id for 500s),
// and every answer is counted and logged the same way.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.ts';
import { BODY_LIMITS } from './body-limits.ts';
import { ApiError, type Area, areaError, isRejectedInput, isUnavailable, unavailableError } from './errors.ts';
import type { Metrics } from './metrics.ts';

/** The request as the logs describe it. */
export interface RequestFacts {
  requestId: string;
  method: string;
  path: string;
  operation: string | undefined;
}

/** The ApiError a thrown value is answered with, in the area's shape. */
export function errorFor(raw: unknown, area: Area, req: RequestFacts, log: Logger): ApiError {
  const { requestId } = req;
  if (raw instanceof ApiError) return raw;
  if (isUnavailable(raw)) {
    log.warn({ err: raw, requestId }, 'database unavailable');
    return unavailableError(area);
  }
  if (isRejectedInput(raw)) {
    // the body guard should have refused it: worth a look, but the client's fault
    log.warn({ err: raw, requestId, path: req.path, operation: req.operation }, 'the database refused a value');
    return areaError(area, 'validation', 'The request holds a value that cannot be stored (a NUL character or too deep nesting)');
  }
  const status = (raw as { status?: number }).status;
  if (status === 413 || (raw as { type?: string }).type === 'entity.too.large') {
    return areaError(area, 'payload_too_large', `The body exceeds the limit of ${BODY_LIMITS[area]} bytes`);
  }
  // co-body: unparsable JSON, or JSON that is not an object or array
  if (status === 400) return areaError(area, 'validation', 'The body is not valid JSON (an object is expected)');
  if (status === 415) return areaError(area, 'unsupported_media_type', 'Unsupported content encoding or charset');
  log.error({ err: raw, requestId, method: req.method, path: req.path }, 'unhandled error');
  return areaError(area, 'internal', 'Internal error; quote the request id when reporting it');
}

/** Metrics and logs of one answered request. */
export function recordOutcome(metrics: Metrics, log: Logger, area: Area, req: RequestFacts, status: number, seconds: number): void {
  const operation = req.operation ?? 'none';
  metrics.observeRequest(operation, status, seconds);
  // what the limits refuse (429) is counted where it is refused, with its reason
  if (area === 'tracking') {
    if (status === 413) metrics.trackingRefused('too_large');
    else if (status === 400 || status === 415) metrics.trackingRefused('invalid');
  }
  if (status >= 500) log.warn({ requestId: req.requestId, status, path: req.path, operation }, 'request failed');
  else if (log.isLevelEnabled('debug')) {
    log.debug({ requestId: req.requestId, method: req.method, path: req.path, status, operation, seconds }, 'request');
  }
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The client's X-Request-Id when it is a sane one, else a new one. */
export function requestIdOf(incoming: string | undefined): string {
  return incoming !== undefined && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
