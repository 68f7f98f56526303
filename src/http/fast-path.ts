// The fast path (TRACKWAY_FAST_PATH, on by default): the hot tracking
// requests — the seven POST /jsv1/.../event/{name} operations and GET
// /jsv1/identify/... — answered at the node:http level, before Koa and
// openapi-backend, when they are well-formed. Everything else, and anything
// unusual about one of these, goes to the Koa app unchanged (with the body
// already read, replayed: replayRequest), so every error answer is the Koa
// app's own.
//
// What it does, and where each rule comes from (nothing is re-implemented
// that could drift from the contract or the Koa path):
// - routing: openapi-backend's router of the Koa path (FastRouter.matchOperation),
//   path parameters decoded by the same compiled templates (FastRouter.pathParams);
// - the Koa path's gates, taken as "hand over" conditions: no query string,
//   Content-Type application/json or text/plain (UTF-8), no Content-Encoding
//   or Transfer-Encoding, a Content-Length within BODY_LIMITS, a body that
//   decodes as UTF-8 without a BOM, parses as a JSON object (co-body's strict
//   mode; anything that looks like __proto__ goes to Koa, whose parser refuses
//   it), and holds nothing PostgreSQL could not store (findUnstorable), a path
//   without NUL (isStorableText);
// - validation: the request validators openapi-backend compiled at start from
//   the contract for this operation (getRequestValidatorsForOperation), called
//   with the same input the Koa path gives them (params coerced the same way);
// - the rules: the area's fast handlers (src/tracking/fast-ingest.handlers.ts, given
//   by server.ts: this module reaches no area) run the same admission
//   sequence as the Koa handlers (src/tracking/tracking.service.ts:
//   validation, address limit, unknown organisation, organisation limit,
//   origin, identity verification, identify budget), checked without
//   charging anything; any refusal hands the request to Koa, which refuses it;
// - the client address as the Koa path resolves it (resolveClientAddress:
//   canonical; TRUST_PROXY: the last X-Forwarded-For entry, a request whose
//   entry is not an IP address handed to Koa, which refuses it), Referer as
//   ctx.get('referer') reads it;
// - the answer byte for byte as Koa writes it: X-Request-Id (the client's, if
//   sane), Access-Control-Allow-Origin, Content-Type, Content-Length, the same
//   JSON; a failure after the item was handed to ingest (the database) is
//   answered by the Koa app's error mapping (src/http/outcome.ts);
// - metrics and logs by the same function as the Koa path (recordOutcome).
import { IncomingMessage, type ServerResponse } from 'node:http';
import type { OpenAPIBackend, Operation } from 'openapi-backend';
import type { Deps } from '../deps.ts';
import { findUnstorable, isStorableText } from './body-guard.ts';
import { BODY_LIMITS } from './body-limits.ts';
import { resolveClientAddress } from './client-address.ts';
import type { ApiError } from './errors.ts';
import { localCounter } from './metrics.ts';
import { errorFor, recordOutcome, type RequestFacts, requestIdOf } from './outcome.ts';
import { validateResponse } from './response-validation.ts';
import type { FastRouter } from './router.ts';
import type { FastHandlers, OperationId } from './types.ts';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** A fast handler as the listener calls it: with what the contract's validators accepted for its operation. */
type ValidatedHandler = (r: {
  params: Record<string, unknown>;
  body: Record<string, unknown> | undefined;
  ip: string;
  origin: string;
  referer: string;
  userAgent: string;
  bodyChars: number;
  gpc: boolean;
}) => ValidatedAnswer | Promise<ValidatedAnswer>;
type ValidatedAnswer = (() => Promise<{ status: number; body: unknown }>) | null;

/** Content types taken as they are (lower case, spaces removed); any other goes to Koa. */
const PLAIN_TYPES = new Set(['application/json', 'application/json;charset=utf-8', 'text/plain', 'text/plain;charset=utf-8']);
/** the Content-Type of every answer, as the Koa app writes it for a JSON body */
const JSON_TYPE = 'application/json; charset=utf-8';
/** a request path with nothing unusual in it (no query, no fragment) */
const SIMPLE_PATH = /^\/jsv1\/[^?#]*$/;
/** co-body's strict mode: an object or array */
const STRICT_JSON = /^[ \t\n\r]*(\[|\{)/;
/** what co-body's parser (bourne) treats as prototype poisoning, or could: left to it */
const PROTO_LIKE = /__proto__|\\u00/i;

/** A request whose body was read here, as the Koa app expects to read it (a stream of the same bytes). */
export function replayRequest(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method;
  copy.url = req.url;
  copy.httpVersion = req.httpVersion;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.headers = req.headers;
  copy.rawHeaders = req.rawHeaders;
  copy.complete = true;
  copy.push(body);
  copy.push(null);
  return copy;
}

/** ctx.get(name) of the Koa app, for headers node keeps as one string. */
function header(req: IncomingMessage, name: 'origin' | 'user-agent' | 'x-request-id'): string {
  return (req.headers[name] as string | undefined) ?? '';
}

/** A body whose length is declared and within the tracking limit, with nothing the Koa gate treats specially. */
function plainBody(req: IncomingMessage): number {
  const h = req.headers;
  if (h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined) return 0;
  const type = h['content-type'];
  if (type === undefined || !PLAIN_TYPES.has(type.toLowerCase().replace(/\s+/g, ''))) return 0;
  const len = h['content-length'];
  if (len === undefined || !/^\d{1,6}$/.test(len)) return 0;
  const n = Number(len);
  return n > 0 && n <= BODY_LIMITS.tracking ? n : 0;
}

function readBody(req: IncomingMessage, length: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let got = 0;
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      got += c.length;
    });
    req.on('end', () => resolve(got === length ? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, got)) : null));
    // cut off (the client went away, or node's request timeout closed it): nothing to answer
    req.on('error', () => resolve(null));
    req.on('close', () => resolve(null));
  });
}

/** The parsed body when the Koa path would parse it the same way and accept it; undefined otherwise. */
function parseBody(raw: Buffer): { value: Record<string, unknown>; chars: number } | undefined {
  if (raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf) return undefined; // a BOM: co-body strips it
  const text = raw.toString('utf8');
  if (text.includes('\uFFFD') || !STRICT_JSON.test(text) || PROTO_LIKE.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  if (findUnstorable(value)) return undefined;
  return { value: value as Record<string, unknown>, chars: text.length };
}

/**
 * The server's request listener: the operations in `handlers` (all in the
 * tracking area: their errors are the tracking API's) answered here when
 * well-formed, everything else by `fallback` (the Koa app). `lead`: the
 * headers (name, value, …) the server puts first on every answer, which
 * `fallback` sets itself for the answers it writes.
 */
export function createFastPath(deps: Deps, api: OpenAPIBackend, handlers: FastHandlers, fallback: Listener, lead: readonly string[] = []): Listener {
  if (!deps.config.fastPath) return fallback;
  const { log, metrics, config } = deps;
  const router = api.router as FastRouter;
  const taken = localCounter({
    name: 'trackway_fast_path_requests_total',
    help: 'hot /jsv1 requests (events, identify): answered by the fast path, or handed over to the Koa app (anything unusual)',
    labelNames: ['outcome'] as const,
    registers: [metrics.registry],
  });
  // the two series, made once (counted here, added to prom-client's when it is read: metrics.ts localCounter)
  const answered = taken.series({ outcome: 'answered' });
  const handedOver = taken.series({ outcome: 'handed_over' });

  /** The contract's compiled request validators of each fast operation, as openapi-backend runs them. */
  const validators = new Map<string, ((data: unknown) => boolean)[]>();
  for (const id of Object.keys(handlers)) {
    const v = api.validator.getRequestValidatorsForOperation(id) as unknown as ((data: unknown) => boolean)[] | null;
    if (!v) throw new Error(`fast path: no request validators for ${id}`);
    validators.set(id, v);
  }

  function valid(op: Operation, req: IncomingMessage, params: Record<string, unknown>, body: unknown): boolean {
    // the input openapi-backend's validateRequest builds for these operations (src/http/router.ts parseRequest)
    const input: Record<string, unknown> = { path: params, query: {}, header: req.headers, cookie: {} };
    if (body !== undefined) input.requestBody = body;
    for (const v of validators.get(op.operationId!)!) if (!v(input)) return false;
    return true;
  }

  /**
   * The answer in one go: the status line and the headers as one flat array
   * (`writeHead`: no header object, no setHeader per header), in the order
   * the Koa app writes them (the server's `lead` first), then the body by
   * `end`, which node writes with the head in one writev of the corked socket.
   */
  function write(res: ServerResponse, requestId: string, status: number, body: string, extra?: Record<string, string>): void {
    const length = String(Buffer.byteLength(body));
    const headers = [...lead, 'X-Request-Id', requestId, 'Access-Control-Allow-Origin', '*'];
    if (extra) for (const k of Object.keys(extra)) headers.push(k, extra[k]!);
    headers.push('Content-Type', JSON_TYPE, 'Content-Length', length);
    res.writeHead(status, headers);
    res.end(body);
  }

  /** The request to the Koa app, with the body read here (if any) replayed. */
  function handOver(req: IncomingMessage, res: ServerResponse, raw?: Buffer): void {
    handedOver.inc();
    fallback(raw === undefined ? req : replayRequest(req, raw), res);
  }

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    op: Operation,
    handler: ValidatedHandler,
    path: string,
    started: bigint,
  ): Promise<void> {
    let raw: Buffer | undefined;
    const ip = resolveClientAddress(req.headers['x-forwarded-for'] as string | undefined, req.socket.remoteAddress, config.trustProxy);
    if (ip === undefined) return handOver(req, res);
    const params = router.pathParams(op, path);
    if (!params) return handOver(req, res);

    let parsed: { value: Record<string, unknown>; chars: number } | undefined;
    if (op.requestBody) {
      const length = plainBody(req);
      if (length === 0) return handOver(req, res);
      raw = (await readBody(req, length)) ?? undefined;
      if (raw === undefined) {
        // cut off or failed mid-body: the client is gone or will get node's own answer
        if (!res.headersSent) res.destroy();
        return;
      }
      parsed = parseBody(raw);
      if (!parsed) return handOver(req, res, raw);
    } else if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) {
      return handOver(req, res, raw);
    }
    if (!valid(op, req, params, parsed?.value)) return handOver(req, res, raw);

    const decided = handler({
      params,
      body: parsed?.value,
      ip,
      origin: header(req, 'origin'),
      referer: (req.headers.referrer as string | undefined) || req.headers.referer || '',
      userAgent: header(req, 'user-agent'),
      bodyChars: parsed?.chars ?? 0,
      gpc: req.headers['sec-gpc'] === '1',
    });
    // a handler that could decide at once (the organisation's policy cached) gave no promise: nothing to wait for
    const submit = decided instanceof Promise ? await decided : decided;
    if (!submit) return handOver(req, res, raw);

    // from here on the request is this path's: charged, and answered here
    answered.inc();
    const requestId = requestIdOf(header(req, 'x-request-id'));
    const facts: RequestFacts = { requestId, method: req.method!, path, operation: op.operationId };
    let status: number;
    try {
      const answer = await submit();
      const body = answer.body;
      status = answer.status;
      if (config.validateResponses) validateResponse(api, log, op.operationId!, status, body);
      write(res, requestId, status, JSON.stringify(body));
    } catch (e) {
      const err: ApiError = errorFor(e, 'tracking', facts, log);
      status = err.status;
      write(res, requestId, status, JSON.stringify({ ...err.body, request_id: requestId }), err.headers);
    }
    recordOutcome(metrics, log, 'tracking', facts, status, Number(process.hrtime.bigint() - started) / 1e9);
  }

  return (req, res) => {
    const url = req.url ?? '';
    const method = req.method;
    if ((method !== 'POST' && method !== 'GET') || !url.startsWith('/jsv1/') || !SIMPLE_PATH.test(url)) return fallback(req, res);
    const op = router.matchOperation({ method, path: url, headers: {} });
    // the request is validated against this operation's contract before its handler sees it (handle)
    const handler = op?.operationId === undefined ? undefined : (handlers[op.operationId as OperationId] as ValidatedHandler | undefined);
    if (!op || handler === undefined) return fallback(req, res);
    // the Koa gate decodes the whole path first and refuses what cannot be stored
    let decoded: string | undefined;
    try {
      decoded = decodeURIComponent(url);
    } catch {
      decoded = undefined;
    }
    if (decoded === undefined || !isStorableText(decoded)) {
      handedOver.inc();
      return fallback(req, res);
    }
    const started = process.hrtime.bigint();
    handle(req, res, op, handler, url, started).catch((err: unknown) => {
      // a fault in this path itself: answered as the Koa app answers a fault
      if (res.headersSent) return res.destroy();
      const facts: RequestFacts = { requestId: requestIdOf(header(req, 'x-request-id')), method, path: url, operation: op.operationId };
      const e = errorFor(err, 'tracking', facts, log);
      write(res, facts.requestId, e.status, JSON.stringify({ ...e.body, request_id: facts.requestId }), e.headers);
      recordOutcome(metrics, log, 'tracking', facts, e.status, Number(process.hrtime.bigint() - started) / 1e9);
    });
  };
}
