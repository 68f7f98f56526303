// Checks a response against the contract: the status must be documented for
// the operation (or, for an unrouted request, be an area error), the content
// type must be a documented one, the body must match its schema, and required
// headers must be present. Independent of openapi-backend on purpose.
import { readFileSync } from 'node:fs';
import type { ValidateFunction } from 'ajv';
import { createAjv } from '../../src/http/ajv.ts';
import { CONTRACT_PATH } from '../../src/http/contract.ts';
import { areaOf } from '../../src/http/errors.ts';

type Json = Record<string, unknown>;

export const doc = JSON.parse(readFileSync(CONTRACT_PATH, 'utf8')) as Json & {
  paths: Record<string, Record<string, Json>>;
  components: Record<string, Record<string, Json>>;
  webhooks: Record<string, Record<string, Json>>;
};

const ajv = createAjv();
ajv.addSchema(doc, 'contract');
const compiled = new Map<string, ValidateFunction>();

function pointer(parts: string[]): string {
  return '#/' + parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

/** A validator for the schema at a JSON pointer in the contract. */
export function validatorAt(parts: string[]): ValidateFunction {
  const ref = `contract${pointer(parts)}`;
  const known = compiled.get(ref);
  if (known) return known;
  const v = ajv.compile({ $ref: ref });
  compiled.set(ref, v);
  return v;
}

export function schemaValidator(name: string): ValidateFunction {
  return validatorAt(['components', 'schemas', name]);
}

function deref<T extends Json>(obj: T): T {
  let cur: Json = obj;
  for (let i = 0; i < 10 && typeof cur.$ref === 'string'; i++) {
    const parts = cur.$ref
      .replace(/^#\//, '')
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    cur = parts.reduce<Json>((o, k) => o[k] as Json, doc);
  }
  return cur as T;
}

export interface Route {
  path: string;
  method: string;
  operationId: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const routes: (Route & { regex: RegExp; literal: number })[] = [];
for (const [p, item] of Object.entries(doc.paths)) {
  for (const m of METHODS) {
    const op = item[m];
    if (!op) continue;
    const regex = new RegExp('^' + p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$');
    routes.push({ path: p, method: m, operationId: op.operationId as string, regex, literal: p.replace(/\{[^}]+\}/g, '').length });
  }
}

export const operations: Route[] = routes.map(({ path, method, operationId }) => ({ path, method, operationId }));

/** The operation a request routes to, as openapi-backend routes it. */
export function route(method: string, path: string): Route | undefined {
  const m = method.toLowerCase();
  const bare = path.split('?')[0]!;
  const exact = routes.find((r) => r.path === bare && r.method === m);
  if (exact) return exact;
  return routes
    .filter((r) => r.regex.test(bare))
    .sort((a, b) => b.literal - a.literal)
    .find((r) => r.method === m);
}

export function operation(r: Route): Json {
  return doc.paths[r.path]![r.method] as Json;
}

const AREA_ERROR = { platform: 'PlatformError', tracking: 'TrackingError', analytics: 'AnalyticsFailure' } as const;

export interface CheckedResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

function fail(method: string, path: string, res: CheckedResponse, why: string): never {
  throw new Error(`contract violation: ${method} ${path} → ${res.status}: ${why}\nbody: ${res.text.slice(0, 500)}`);
}

export function checkResponse(method: string, path: string, res: CheckedResponse): void {
  const r = route(method, path);
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!r) {
    // unrouted: 404 / 405 in the area's error shape
    if (![404, 405].includes(res.status)) fail(method, path, res, 'no operation matches and status is not 404/405');
    if (type !== 'application/json') fail(method, path, res, `error body must be JSON, got ${type}`);
    const v = schemaValidator(AREA_ERROR[areaOf(path.split('?')[0]!)]);
    if (!v(res.body)) fail(method, path, res, ajv.errorsText(v.errors));
    return;
  }
  const op = operation(r);
  const responses = op.responses as Record<string, Json>;
  const key = [String(res.status), `${String(res.status)[0]}XX`, 'default'].find((k) => responses[k]);
  if (!key) fail(method, path, res, `status ${res.status} is not documented for ${r.operationId}`);
  const resp = deref(responses[key]!);
  for (const [name, h] of Object.entries((resp.headers ?? {}) as Record<string, Json>)) {
    if (deref(h).required && !res.headers.has(name)) fail(method, path, res, `required header ${name} is missing`);
  }
  const content = resp.content as Record<string, Json> | undefined;
  if (!content) {
    if (res.text.length > 0) fail(method, path, res, 'documented without a body but one was sent');
    return;
  }
  if (!content[type]) fail(method, path, res, `content type ${type || '(none)'} is not one of ${Object.keys(content).join(', ')}`);
  if (type === 'application/json') {
    // the response object may be a $ref into components.responses
    const ref = responses[key]!.$ref as string | undefined;
    const base = ref
      ? ref
          .replace(/^#\//, '')
          .split('/')
          .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      : ['paths', r.path, r.method, 'responses', key];
    const v = validatorAt([...base, 'content', 'application/json', 'schema']);
    if (!v(res.body)) fail(method, path, res, ajv.errorsText(v.errors));
  }
}

export { ajv };
