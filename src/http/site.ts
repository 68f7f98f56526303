// Routes outside the contract: the published contract, the API reference
// (Swagger UI from the npm registry, no CDN), the webhook receiver guide,
// Prometheus metrics and the dashboard.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import { contractJson, contractYaml } from './contract.ts';
import { webhookDocsHtml } from '../webhooks/docs-page.ts';
import { dashboardRoutes } from '../dashboard/routes.ts';

const require = createRequire(import.meta.url);
const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Trackway API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <style>body { margin: 0; } .topbar { display: none; } .swagger-ui .renderedMarkdown table, .swagger-ui .markdown table { display: block; max-width: 100%; overflow-x: auto; }</style>
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
});
`;

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
  router.get('/openapi.json', (ctx) => send(ctx, 'application/json; charset=utf-8', contractJson()));
  router.get('/openapi.yaml', (ctx) => send(ctx, 'application/yaml; charset=utf-8', contractYaml()));
  router.get('/docs', (ctx) => send(ctx, 'text/html; charset=utf-8', DOCS_HTML));
  const webhookDocs = webhookDocsHtml(deps.config);
  router.get('/docs/webhooks', (ctx) => send(ctx, 'text/html; charset=utf-8', webhookDocs));
  router.get('/docs/init.js', (ctx) => send(ctx, 'text/javascript; charset=utf-8', DOCS_INIT));
  router.get('/docs/assets/:file', (ctx) => {
    const type = SWAGGER_FILES[ctx.params.file ?? ''];
    if (!type) return; // falls through to a JSON 404
    send(ctx, type, asset(ctx.params.file!), 'public, max-age=86400');
  });
  router.get('/metrics', async (ctx) => {
    const { registry, scrape } = deps.metrics;
    send(ctx, registry.contentType, await (scrape ? scrape() : registry.metrics()));
  });
  dashboardRoutes(router, deps);
  return router;
}
