// openapi-backend wiring: the contract routes each request to the handler
// named after its operationId, authenticates it, validates params and body,
// and every special outcome maps to the area's error envelope.
import type Koa from 'koa';
import { OpenAPIBackend, type Context, type Handler } from 'openapi-backend';
import type { ErrorObject } from 'ajv';
import type { Deps } from '../deps.ts';
import { authenticate } from './registry.ts';
import { createAjv } from './ajv.ts';
import { FastRouter } from './router.ts';
import { contractDocument } from './contract.ts';
import { ApiError, type FieldError, areaError, areaOf } from './errors.ts';
import type { HandlerMap } from './types.ts';

/**
 * openapi-backend checks definitions against the OpenAPI 3.0 schema only and
 * would reject our valid 3.1 document; Redocly lints the document instead.
 */
class Backend extends OpenAPIBackend {
  override validateDefinition() {
    return this.definition;
  }

  /** The stock router, with everything it recomputes per request computed once (see router.ts). */
  override async init() {
    await super.init();
    this.router = new FastRouter({
      definition: this.definition,
      apiRoot: this.apiRoot,
      ignoreTrailingSlashes: this.ignoreTrailingSlashes,
    });
    this.validator.router = this.router;
    return this;
  }
}

const PARTS: Record<string, string> = { requestBody: 'body', path: 'path', query: 'query', header: 'header' };

/** Ajv errors as `[{path, message}]`, paths like `body.data.endpoint` or `path.org_id`. */
export function fieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    const segs = e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const [first, ...rest] = segs;
    const parts = [first ? (PARTS[first] ?? first) : 'request', ...rest];
    let message = e.message ?? 'is invalid';
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required') parts.push(String(params.missingProperty));
    if (e.keyword === 'additionalProperty' || e.keyword === 'additionalProperties') {
      message = `is not allowed (${String(params.additionalProperty)})`;
      parts.push(String(params.additionalProperty));
    }
    if (e.keyword === 'required') message = 'is required';
    if (e.keyword === 'enum') message = `must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    // oneOf/anyOf/if wrappers repeat what their branches said
    if (['oneOf', 'anyOf', 'if'].includes(e.keyword) && out.length > 0) continue;
    const path = parts.join('.');
    const key = `${path} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path, message });
    if (out.length >= 20) break;
  }
  return out;
}

function summary(errors: FieldError[]): string {
  if (errors.length === 0) return 'The request is invalid';
  const first = errors.slice(0, 3).map((e) => `${e.path} ${e.message}`);
  return `Invalid request: ${first.join('; ')}${errors.length > 3 ? ` (and ${errors.length - 3} more)` : ''}`;
}

export async function createApi(deps: Deps, handlers: HandlerMap): Promise<OpenAPIBackend> {
  // One Ajv per option set, shared by all operations: openapi-backend would
  // otherwise build an Ajv instance per operation (seconds at boot). The
  // options must be kept: params are validated with coerceTypes.
  const ajvs = new Map<string, ReturnType<typeof createAjv>>();
  const api = new Backend({
    definition: contractDocument() as never,
    strict: true,
    // quick: validators compile lazily; request validators are compiled just
    // below, response validators (tests only) on first use
    quick: true,
    validate: true,
    // query parameters arrive typed as the contract says (limit: number, ...)
    coerceTypes: true,
    ignoreTrailingSlashes: false,
    customizeAjv: (_original, opts) => {
      const key = JSON.stringify(opts);
      let ajv = ajvs.get(key);
      if (!ajv) ajvs.set(key, (ajv = createAjv(opts)));
      return ajv;
    },
  });

  const special: Record<string, Handler> = {
    postRoutingHandler: (c: Context, ctx: Koa.Context) => {
      if (c.operation) ctx.state.operationId = c.operation.operationId;
    },
    // openapi-backend re-parses path params as strings after validation; hand
    // handlers the validated, coerced ones (org_id: number, ...)
    preOperationHandler: (c: Context) => {
      const coerced = (c.validation?.coerced as { params?: Record<string, unknown> } | undefined)?.params;
      if (coerced) c.request.params = coerced as never;
    },
    validationFail: (c: Context, ctx: Koa.Context) => {
      const errors = fieldErrors(c.validation.errors);
      throw areaError(areaOf(ctx.path), 'validation', summary(errors), { errors });
    },
    notFound: (_c: Context, ctx: Koa.Context) => {
      throw areaError(areaOf(ctx.path), 'not_found', `No route for ${ctx.method} ${ctx.path}`);
    },
    methodNotAllowed: (_c: Context, ctx: Koa.Context) => {
      const allowed = api.router
        .getOperations()
        .filter((op) => api.router.matchOperation({ method: op.method, path: ctx.path, headers: {} }, false)?.path === op.path)
        .map((op) => op.method.toUpperCase());
      throw areaError(areaOf(ctx.path), 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`, {
        headers: { Allow: [...new Set(allowed)].join(', ') },
      });
    },
    unauthorizedHandler: (c: Context) => {
      const failure = (c.security.bearerAuth as { error?: unknown } | undefined)?.error;
      if (failure instanceof ApiError) throw failure;
      // anything else (the database unreachable, a bug) is not the caller's fault:
      // rethrown, it renders as 503 or 500 instead of a misleading 401
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- whatever the security handler threw, as it was
      if (failure) throw failure;
      throw new ApiError(
        401,
        { code: 4010, message: 'A valid bearer token is required' },
        { 'WWW-Authenticate': 'Bearer' },
      );
    },
  };

  api.register({ ...special, ...(handlers as unknown as Record<string, Handler>) });
  api.registerSecurityHandler('bearerAuth', (c: Context, ctx: Koa.Context) =>
    authenticate(deps, ctx.get('authorization'), (c.request.params as { platform_name?: string }).platform_name),
  );
  await api.init();
  api.validator.preCompileRequestValidators();

  // The registry and the contract must name the same operations, both ways.
  const inContract = new Set(api.getOperations().map((op) => op.operationId!));
  const inRegistry = new Set(Object.keys(handlers));
  const missing = [...inContract].filter((id) => !inRegistry.has(id));
  const extra = [...inRegistry].filter((id) => !inContract.has(id));
  if (missing.length || extra.length) {
    throw new Error(
      `handler registry and contract disagree: missing handlers [${missing.join(', ')}], unknown operations [${extra.join(', ')}]`,
    );
  }
  return api;
}
