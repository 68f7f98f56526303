// The typed client's generated half (generated/client.ts, written by
// `npm run generate` beside openapi.ts): `createTrackwayClient`, an
// openapi-fetch client typed by the contract's `paths`, with one method per
// operation named after its operationId. Only what the contract says is
// generated here; what it cannot say (the identify payload's encoding, the
// `null` corex_id, webhook signatures) is hand-written in src/client/.

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

interface Operation {
  operationId: string;
  method: (typeof METHODS)[number];
  path: string;
  summary: string;
  deprecated: boolean;
}

/** The contract's operations (not its webhooks), in document order. */
export function operationsOf(doc: Record<string, unknown>): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    for (const method of METHODS) {
      const op = item[method] as { operationId?: string; summary?: string; deprecated?: boolean } | undefined;
      if (!op) continue;
      if (!op.operationId || !/^[A-Za-z_$][\w$]*$/.test(op.operationId)) throw new Error(`${method.toUpperCase()} ${path} has no usable operationId`);
      out.push({ operationId: op.operationId, method, path, summary: op.summary ?? '', deprecated: op.deprecated === true });
    }
  }
  const seen = new Set<string>();
  for (const o of out) {
    if (seen.has(o.operationId)) throw new Error(`operationId ${o.operationId} is used twice`);
    seen.add(o.operationId);
  }
  return out;
}

const comment = (text: string) => text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();

export function clientSource(doc: Record<string, unknown>, header: string): string {
  const ops = operationsOf(doc);
  const table = ops.map((o) => `  ${o.operationId}: { method: '${o.method.toUpperCase()}', path: '${o.path}' },`).join('\n');
  const signatures = ops
    .map((o) => {
      const p = `paths['${o.path}']`;
      const doc = `  /** \`${o.method.toUpperCase()} ${o.path}\`${o.summary ? `: ${comment(o.summary)}` : ''}${o.deprecated ? ' @deprecated' : ''} */`;
      return `${doc}\n  ${o.operationId}(...init: InitArgs<${p}, '${o.method}'>): Promise<FetchResponse<${p}['${o.method}'], InitOf<${p}, '${o.method}'>, \`\${string}/\${string}\`>>;`;
    })
    .join('\n');
  const bodies = ops.map((o) => `    ${o.operationId}: (...init) => client.${o.method.toUpperCase()}('${o.path}', ...init),`).join('\n');
  return `${header}import createClient, { type Client, type ClientOptions, type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import type { components, paths, webhooks } from './openapi.ts';

export type { components, paths, webhooks };
/** The contract's named schemas (\`components.schemas\`). */
export type Schemas = components['schemas'];

/** Every operation of the contract by operationId: its method and path template. */
export const operations = {
${table}
} as const;

export type OperationId = keyof typeof operations;

type InitOf<P, M extends keyof P> = MaybeOptionalInit<P, M>;
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** An operation's argument: optional when nothing in it is required (as openapi-fetch's own methods). */
type InitArgs<P, M extends keyof P> = RequiredKeys<NonNullable<InitOf<P, M>>> extends never ? [init?: InitOf<P, M>] : [init: InitOf<P, M>];

/** One method per operation, named after its operationId: \`client.loginPlatformUser({ params, body })\`. */
export interface TrackwayOperations {
${signatures}
}

export interface TrackwayClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** where the Trackway instance is, e.g. \`https://api.trackway.example\` (no trailing path) */
  baseUrl: string;
  /** a bearer token (from loginPlatformUser), sent as \`Authorization: Bearer <token>\` unless a request sets its own */
  token?: string;
}

export interface TrackwayClient extends Client<paths>, TrackwayOperations {
  /** Sets (or, with undefined, removes) the bearer token of the requests that follow. */
  setToken(token: string | undefined): void;
}

/**
 * A client of the whole contract, typed end to end by \`paths\` (openapi-fetch):
 * \`client.POST('/v1/rest/{platform_name}/users/login', { params, body })\`, or the
 * same call by its operationId, \`client.loginPlatformUser({ params, body })\`.
 * Each call answers \`{ data, error, response }\`: \`data\` on a 2xx, \`error\` (the
 * area's error body) otherwise.
 */
export function createTrackwayClient(options: TrackwayClientOptions): TrackwayClient {
  const { token: initial, ...rest } = options;
  let token = initial;
  const client = createClient<paths>(rest);
  client.use({
    onRequest({ request }) {
      if (token && !request.headers.has('authorization')) request.headers.set('authorization', \`Bearer \${token}\`);
      return request;
    },
  });
  const byOperation: TrackwayOperations = {
${bodies}
  };
  return Object.assign(client, byOperation, {
    setToken(next: string | undefined) {
      token = next;
    },
  });
}
`;
}
