// /dashboard over HTTP: the app's HTML for every path under /dashboard
// (never cached, strict CSP), its assets under content-hashed names (cached
// for a year, gzip when accepted), and JSON 404s for unknown assets.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import type { PlatformError } from '../support/client.ts';

describe('dashboard routes', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.stop());

  const get = (path: string, headers: Record<string, string> = {}) => fetch(srv.url + path, { headers });

  async function assets(): Promise<{ script: string; style: string }> {
    const html = await (await get('/dashboard')).text();
    const script = /<script type="module" src="(\/dashboard\/assets\/app-[A-Za-z0-9_-]{12}\.js)"><\/script>/.exec(html)?.[1];
    const style = /<link rel="stylesheet" href="(\/dashboard\/assets\/style-[A-Za-z0-9_-]{12}\.css)">/.exec(html)?.[1];
    expect(script, html).to.be.a('string');
    expect(style, html).to.be.a('string');
    return { script: script!, style: style! };
  }

  it('sends the bare address to the dashboard (302), not to a JSON 404', async () => {
    const r = await fetch(`${srv.url}/`, { redirect: 'manual' });
    expect(r.status).to.equal(302);
    expect(r.headers.get('location')).to.equal('/dashboard');
    const followed = await fetch(`${srv.url}/`);
    expect(followed.url).to.equal(`${srv.url}/dashboard`);
    expect(followed.headers.get('content-type')).to.equal('text/html; charset=utf-8');
  });

  it('serves the app for /dashboard and every path under it, uncached, with a strict Content-Security-Policy', async () => {
    const first = await (await get('/dashboard')).text();
    for (const path of ['/dashboard', '/dashboard/', '/dashboard/organisations/42/deliveries?status=failed', '/dashboard/no/such/page']) {
      const r = await get(path);
      expect(r.status, path).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).to.equal('no-cache');
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp).to.include("default-src 'none'").and.include("script-src 'self'").and.include("style-src 'self'").and.include("connect-src 'self'");
      expect(csp).to.not.match(/unsafe-inline|unsafe-eval|https?:/);
      expect(r.headers.get('x-frame-options')).to.equal('DENY');
      expect(r.headers.get('x-content-type-options')).to.equal('nosniff');
      const html = await r.text();
      expect(html).to.equal(first);
    }
    // no inline script or style, nothing from another origin
    expect(first).to.not.match(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(first).to.not.match(/<style|\sstyle=/);
    expect(first).to.not.match(/(src|href)="(https?:)?\/\//);
  });

  it('serves the script and style sheet under content-hashed names, cached for a year, gzipped when accepted', async () => {
    const { script, style } = await assets();
    for (const [path, type] of [
      [script, 'text/javascript; charset=utf-8'],
      [style, 'text/css; charset=utf-8'],
    ] as const) {
      const plain = await get(path, { 'accept-encoding': 'identity' });
      expect(plain.status).to.equal(200);
      expect(plain.headers.get('content-type')).to.equal(type);
      expect(plain.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
      const body = Buffer.from(await plain.arrayBuffer());
      const hash = createHash('sha256').update(body).digest('base64url').slice(0, 12);
      expect(path).to.include(`-${hash}.`);

      // fetch() would decode gzip itself: ask node:http's view through a raw request
      const raw = await rawGet(srv.url + path, { 'accept-encoding': 'gzip' });
      expect(raw.headers['content-encoding']).to.equal('gzip');
      expect(raw.headers.vary).to.equal('Accept-Encoding');
      expect(gunzipSync(raw.body).equals(body)).to.equal(true);
    }
  });

  it('answers a JSON 404 for an unknown asset, never the page', async () => {
    for (const path of ['/dashboard/assets/app-000000000000.js', '/dashboard/assets/x/y.css']) {
      const r = await srv.api.get<PlatformError>(path, { unchecked: true });
      expect(r.status, path).to.equal(404);
      expect(r.body.code).to.equal(4040);
    }
  });
});

function rawGet(url: string, headers: Record<string, string>): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}
