// The HTTP client tests use: real requests to the app, and every response
// checked against the contract before the test sees it.
import type { components, operations } from '../../generated/openapi.ts';
import { checkResponse } from './contract.ts';

/** An operation of the contract, by its operationId. */
export type OperationName = keyof operations;
type Responses<K extends OperationName> = operations[K]['responses'];
type Content<R> = R extends { content: infer C } ? (C extends { 'application/json': infer B } ? B : C[keyof C]) : undefined;
type SuccessStatus<K extends OperationName> = Extract<keyof Responses<K>, 200 | 201 | 202 | 204>;

/**
 * The documented body of operation K's reply with status S (by default its
 * success), from generated/openapi.ts: `srv.api.get<BodyOf<'getOrganisation'>>(path)`
 * gives `r.body` the contract's type, and every reply is checked against the
 * contract at run time (checkResponse) before the test reads it.
 */
export type BodyOf<K extends OperationName, S extends keyof Responses<K> = SuccessStatus<K>> = Content<Responses<K>[S]>;

type Schemas = components['schemas'];
/** The error bodies the contract documents, per area. */
export type PlatformError = Schemas['PlatformError'];
export type TrackingError = Schemas['TrackingError'];
export type AnalyticsError = Schemas['AnalyticsError'];
/** The analytics host's refusal of an input (`status: 'failed'`, a `code` and its `reason`). */
export type AnalyticsFailure = Schemas['AnalyticsFailure'];

/**
 * A reply: `body` typed as T. Give T from the contract (`BodyOf<'op'>`, or
 * an area's error body) wherever a test reads the body; without it the body
 * is `unknown` (only its status, headers and text can be read untyped).
 */
export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** sent as is (a string or bytes), with the given content type */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  token?: string;
  /** skip the contract check (only for deliberately off-contract probes such as the docs pages) */
  unchecked?: boolean;
}

export class ApiClient {
  constructor(readonly base: string) {}

  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | Uint8Array | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const res = await fetch(this.base + path, { method, headers, body: body as BodyInit | undefined, redirect: 'manual' });
    const buf = Buffer.from(await res.arrayBuffer());
    const text = buf.toString('utf8');
    const type = res.headers.get('content-type') ?? '';
    let parsed: unknown = text;
    if (type.startsWith('application/json') && text.length > 0) parsed = JSON.parse(text);
    else if (!type.startsWith('text/') && !type.includes('javascript') && !type.includes('yaml')) parsed = buf;
    const reply = { status: res.status, headers: res.headers, body: parsed as T, text };
    if (!opts.unchecked) checkResponse(method, path, reply);
    return reply;
  }

  get<T = unknown>(path: string, opts?: RequestOptions) {
    return this.request<T>('GET', path, opts);
  }
  post<T = unknown>(path: string, body?: unknown, opts: RequestOptions = {}) {
    return this.request<T>('POST', path, { ...opts, body });
  }
  put<T = unknown>(path: string, body?: unknown, opts: RequestOptions = {}) {
    return this.request<T>('PUT', path, { ...opts, body });
  }
  delete<T = unknown>(path: string, opts?: RequestOptions) {
    return this.request<T>('DELETE', path, opts);
  }
}

/** An error body without its `request_id`, after checking that it equals the X-Request-Id header. */
export function errorBody<T = unknown>(r: Reply): T {
  const { request_id, ...rest } = r.body as Record<string, unknown>;
  if (request_id !== r.headers.get('x-request-id')) {
    throw new Error(`error body request_id ${String(request_id)} is not the X-Request-Id ${String(r.headers.get('x-request-id'))}: ${r.text}`);
  }
  return rest as T;
}
