// Handler types derived from the generated contract types, so a handler's
// input and its success responses are checked against the document at compile time.
import type { Context as OasContext } from 'openapi-backend';
import type Koa from 'koa';
import type { components, operations, webhooks } from '../../generated/openapi.ts';
import type { OrgId } from '../db/tenancy.ts';

/** Operations Trackway sends (the `webhooks` section), not ones it serves. */
type WebhookOperation = webhooks[keyof webhooks]['post'];
export type WebhookOperationId = { [K in keyof operations]: operations[K] extends WebhookOperation ? K : never }[keyof operations];
/** Operations the server serves: every operation of the contract except the webhooks it sends. */
export type OperationId = Exclude<keyof operations, WebhookOperationId>;
export type Schemas = components['schemas'];

/** openapi-typescript writes `never` for absent parts; handlers see `undefined` instead. */
type Defined<T> = [T] extends [never] ? undefined : T extends undefined ? undefined : T;

type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : undefined;

export type RequestBodyOf<K extends OperationId> = operations[K] extends { requestBody: infer R }
  ? Defined<JsonContent<R>>
  : operations[K] extends { requestBody?: infer R }
    ? Defined<JsonContent<NonNullable<R>>> | undefined
    : undefined;

type Part<K extends OperationId, P extends string> = operations[K]['parameters'] extends infer Ps
  ? Ps extends Record<string, unknown>
    ? P extends keyof Ps
      ? Defined<Ps[P]>
      : undefined
    : undefined
  : undefined;

/**
 * An `org_id` parameter (in the path, or the query), once the contract's validators have checked it
 * (a positive integer), is an organisation's id: this is where it is branded
 * (`OrgId`, src/db/tenancy.ts).
 */
type Branded<P> = P extends { org_id?: number } ? { [N in keyof P]: N extends 'org_id' ? OrgId | Exclude<P[N], number> : P[N] } : P;

export type PathOf<K extends OperationId> = Branded<Part<K, 'path'>>;
export type QueryOf<K extends OperationId> = Branded<Part<K, 'query'>>;

type Responses<K extends OperationId> = operations[K]['responses'];

type ContentBody<R> = R extends { content: infer C } ? (C extends Record<string, infer B> ? B : undefined) : undefined;

/** Every documented 2xx response of the operation, as `{status, body}`. */
export type SuccessOf<K extends OperationId> = {
  [S in keyof Responses<K>]: S extends 200 | 201 | 202 | 204
    ? { status: S; body: ContentBody<Responses<K>[S]>; headers?: Record<string, string>; type?: string }
    : never;
}[keyof Responses<K>];

/** The authenticated caller of a bearer-protected platform operation. */
export interface Principal {
  userId: number;
  platform: string;
}

export type OpContext<K extends OperationId> = Omit<OasContext, 'request' | 'security'> & {
  request: OasContext['request'] & {
    requestBody: RequestBodyOf<K>;
    params: PathOf<K>;
    query: QueryOf<K>;
  };
  security: { authorized: boolean; bearerAuth?: Principal };
};

export type HandlerFor<K extends OperationId> = (c: OpContext<K>, ctx: Koa.Context) => Promise<SuccessOf<K>> | SuccessOf<K>;

export type HandlerMap<K extends OperationId = OperationId> = { [Id in K]: HandlerFor<Id> };

/**
 * What a fast handler of operation K gets: the request as the Koa path would
 * hand it to its handler and rules, typed from generated/openapi.ts as the
 * Koa handlers' are; the fast path (src/http/fast-path.ts) builds it (above).
 */
export interface FastRequest<K extends OperationId> {
  /** path parameters, validated and coerced by the contract's validators */
  params: PathOf<K>;
  /** the parsed, validated body (undefined for operations without one) */
  body: RequestBodyOf<K>;
  /** as Koa's ctx.ip and ctx.get() give them */
  ip: string;
  origin: string;
  referer: string;
  userAgent: string;
  /** length of the decoded body text (0 without a body), as the Koa path's rawBody.length */
  bodyChars: number;
  /** `Sec-GPC: 1` (Global Privacy Control), as ctx.get('sec-gpc') === '1' reads it */
  gpc: boolean;
}

/**
 * An area's fast handler: null when anything would refuse the request (it is
 * then handed to the Koa app, so it must have charged and stored nothing);
 * otherwise a function that does the work and gives the success answer.
 */
export type FastAnswer<K extends OperationId> = (() => Promise<SuccessOf<K>>) | null;
/** given at once when the handler can decide without waiting (the fast path then awaits nothing before it submits) */
export type FastHandler<K extends OperationId> = (r: FastRequest<K>) => FastAnswer<K> | Promise<FastAnswer<K>>;
export type FastHandlers = { [K in OperationId]?: FastHandler<K> };
