// openapi-backend wiring: the contract routes each request to the handler
// named after its operationId, authenticates it, validates params and body,
// and every special outcome maps to the area's error envelope.
import type Koa from 'koa';
import { OpenAPIBackend, type Context, type Handler } from 'openapi-backend';
import type { Deps } from '../deps.ts';
import { authenticate } from './registry.ts';
import { createAjv } from './ajv.ts';
import { FastRouter } from './router.ts';
import { contractDocument } from './contract.ts';
import { ApiError, areaError, areaOf, trackingError } from './errors.ts';
import { requestFieldErrors, summary } from './field-errors.ts';
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
      const errors = requestFieldErrors(c.validation.errors);
      // the identify payload segment is the payload itself: its own error, as the tracker reads it
      if (c.operation?.operationId === 'identifyVisitor' && errors.some((e) => e.path === 'path.payload')) {
        throw trackingError(400, 'invalid_payload', 'The payload is not base64url of a JSON object (at most 4096 characters)');
      }
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
      throw new ApiError(401, { code: 4010, message: 'A valid bearer token is required' }, { 'WWW-Authenticate': 'Bearer' });
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
    throw new Error(`handler registry and contract disagree: missing handlers [${missing.join(', ')}], unknown operations [${extra.join(', ')}]`);
  }
  return api;
}
