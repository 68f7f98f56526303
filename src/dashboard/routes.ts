// /dashboard: the single-page app's HTML for /dashboard and every path under
// it (the app routes in the browser), and its hashed assets. The HTML is
// never cached and carries a strict Content-Security-Policy (scripts and
// styles only from this origin, no inline code, API calls only to this
// origin); the assets are immutable under their content-hashed names.
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import { getDashboard } from './bundle.ts';

export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const ASSET_CACHE = 'public, max-age=31536000, immutable';

function common(ctx: Koa.Context): void {
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
}

export function dashboardRoutes(router: Router, deps: Deps): void {
  // build now so the first visit does not wait; a failed build is logged here
  // and tried again by the next request (which then answers 500)
  getDashboard().catch((err: unknown) => deps.log.error({ err }, 'the dashboard could not be built'));

  router.get('/dashboard/assets/:file', async (ctx) => {
    const asset = (await getDashboard()).assets.get(ctx.params.file ?? '');
    if (!asset) return; // falls through to a JSON 404
    common(ctx);
    ctx.status = 200;
    ctx.type = asset.type;
    ctx.set('Cache-Control', ASSET_CACHE);
    ctx.set('Vary', 'Accept-Encoding');
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = asset.gzip;
    } else ctx.body = asset.body;
  });

  router.get('/dashboard{/*rest}', async (ctx) => {
    if (ctx.path.startsWith('/dashboard/assets/')) return; // a JSON 404, never the page
    const { html } = await getDashboard();
    common(ctx);
    ctx.status = 200;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('Content-Security-Policy', DASHBOARD_CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.body = html;
  });
}
