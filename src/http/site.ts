// Routes outside the contract: the published contract, the API reference
// (Swagger UI from the npm registry, no CDN), the webhook receiver guide,
// Prometheus metrics and the dashboard.
//
// The documentation pages carry a Content-Security-Policy (scripts, styles,
// images and requests only from this origin; the one inline style of each
// page allowed by its hash; no framing), `X-Frame-Options: DENY` and
// `X-Content-Type-Options: nosniff`. Asset names are looked up in a Map, so
// `constructor` or `__proto__` are unknown names (a JSON 404) like any other.
// /metrics requires `Authorization: Bearer <METRICS_TOKEN>` when that is set.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import { servedContract } from './contract.ts';
import { platformError } from './errors.ts';
import { FAVICON_ICO, FAVICON_LINK } from './favicon.ts';
import { dashboardRoutes, webhookDocsHtml } from './registry.ts';

const require = createRequire(import.meta.url);
const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const SWAGGER_FILES = new Map<string, string>([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['swagger-ui-standalone-preset.js', 'text/javascript; charset=utf-8'],
]);

const DOCS_STYLE =
  'body { margin: 0; } .topbar { display: none; } .swagger-ui .renderedMarkdown table, .swagger-ui .markdown table { display: block; max-width: 100%; overflow-x: auto; }';

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Trackway API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  ${FAVICON_LINK}
  <style>${DOCS_STYLE}</style>
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'BaseLayout',
  defaultModelsExpandDepth: 0,
  validatorUrl: null,
});
`;

/** The policy of a documentation page whose inline <style> elements hold exactly `styles`. */
export function docsCsp(styles: string[]): string {
  const hashes = styles.map((css) => `'sha256-${createHash('sha256').update(css, 'utf8').digest('base64')}'`);
  return [
    "default-src 'none'",
    "script-src 'self'",
    ["style-src 'self'", ...hashes].join(' '),
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The text of every inline <style> element of a page. */
function inlineStyles(html: string): string[] {
  return [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!);
}

/** `X-Content-Type-Options`, and for pages the policy and no framing. */
function hardened(ctx: Koa.Context, csp?: string): void {
  ctx.set('X-Content-Type-Options', 'nosniff');
  if (csp === undefined) return;
  ctx.set('Content-Security-Policy', csp);
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'same-origin');
}

/** Whether the Authorization header is `Bearer <token>` (compared in constant time, whatever the lengths). */
function bearerMatches(header: string, token: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v, 'utf8').digest();
  return timingSafeEqual(digest(header), digest(`Bearer ${token}`));
}

const assetCache = new Map<string, Buffer>();
function asset(file: string): Buffer {
  let buf = assetCache.get(file);
  if (!buf) {
    buf = readFileSync(path.join(SWAGGER_DIR, file));
    assetCache.set(file, buf);
  }
  return buf;
}

function send(ctx: Koa.Context, type: string, body: string | Buffer, cache = 'no-cache'): void {
  ctx.status = 200;
  ctx.type = type;
  ctx.set('Cache-Control', cache);
  ctx.body = body;
}

export function siteRouter(deps: Deps): Router {
  const router = new Router();
  // a newcomer opening the bare address lands on the dashboard, not on a JSON 404
  router.get('/', (ctx) => {
    ctx.status = 302;
    ctx.redirect('/dashboard');
  });
  router.get('/favicon.ico', (ctx) => {
    hardened(ctx);
    send(ctx, 'image/x-icon', FAVICON_ICO, 'public, max-age=86400');
  });
  // PUBLIC_URL, else the address this request reached (scheme and Host)
  const instance = (ctx: Koa.Context) => (deps.config.publicUrlSet ? deps.config.publicUrl : `${ctx.protocol}://${ctx.host}`);
  router.get('/openapi.json', (ctx) => {
    hardened(ctx);
    send(ctx, 'application/json; charset=utf-8', servedContract(instance(ctx)).json);
  });
  router.get('/openapi.yaml', (ctx) => {
    hardened(ctx);
    send(ctx, 'application/yaml; charset=utf-8', servedContract(instance(ctx)).yaml);
  });
  const docsPolicy = docsCsp(inlineStyles(DOCS_HTML));
  router.get('/docs', (ctx) => {
    hardened(ctx, docsPolicy);
    send(ctx, 'text/html; charset=utf-8', DOCS_HTML);
  });
  const webhookDocs = webhookDocsHtml(deps.config);
  const webhookDocsPolicy = docsCsp(inlineStyles(webhookDocs));
  router.get('/docs/webhooks', (ctx) => {
    hardened(ctx, webhookDocsPolicy);
    send(ctx, 'text/html; charset=utf-8', webhookDocs);
  });
  router.get('/docs/init.js', (ctx) => {
    hardened(ctx, docsPolicy);
    send(ctx, 'text/javascript; charset=utf-8', DOCS_INIT);
  });
  router.get('/docs/assets/:file', (ctx) => {
    const name = ctx.params.file ?? '';
    const type = SWAGGER_FILES.get(name);
    if (!type) return; // falls through to a JSON 404
    hardened(ctx);
    send(ctx, type, asset(name), 'public, max-age=86400');
  });
  const { metricsToken } = deps.config;
  router.get('/metrics', async (ctx) => {
    if (metricsToken !== undefined && !bearerMatches(ctx.get('authorization'), metricsToken)) {
      const err = platformError(401, 4010, 'The metrics need Authorization: Bearer <METRICS_TOKEN>');
      err.headers['WWW-Authenticate'] = 'Bearer realm="metrics"';
      throw err;
    }
    const { registry, scrape } = deps.metrics;
    send(ctx, registry.contentType, await (scrape ? scrape() : registry.metrics()));
  });
  dashboardRoutes(router, deps);
  return router;
}
