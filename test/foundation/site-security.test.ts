// Issue 12 point 6, the small ones: any unknown asset name is a JSON 404 (it
// was a 500 for `constructor`, `toString`, `__proto__`: a lookup in a plain
// object); the documentation pages carry a Content-Security-Policy,
// `X-Frame-Options: DENY` and `nosniff` (that Swagger UI works under it is
// test/foundation/docs.browser.test.ts); /metrics needs
// `Authorization: Bearer <METRICS_TOKEN>` when that is set, and is open when
// it is not.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import type { PlatformError } from '../support/client.ts';

const PROTOTYPE_NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__', 'prototype'];

describe('site hardening', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.stop());

  it('answers every unknown asset name with a JSON 404, prototype names included (docs and dashboard)', async () => {
    for (const name of [...PROTOTYPE_NAMES, 'no-such-file.js', '..%2Fpackage.json']) {
      for (const base of ['/docs/assets/', '/dashboard/assets/']) {
        const r = await srv.api.get<PlatformError>(base + name, { unchecked: true });
        expect(r.status, base + name).to.equal(404);
        expect(r.body.code, base + name).to.equal(4040);
      }
    }
    expect((await srv.api.get('/docs/assets/swagger-ui.css', { unchecked: true })).status).to.equal(200);
  });

  it('serves a favicon at /favicon.ico (a 32×32 ICO) and names it on the dashboard and docs pages', async () => {
    const r = await fetch(`${srv.url}/favicon.ico`);
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/x-icon');
    expect(r.headers.get('x-content-type-options')).to.equal('nosniff');
    const ico = Buffer.from(await r.arrayBuffer());
    // ICONDIR: reserved 0, type 1 (icon), one image of 32×32 at 32 bits a pixel
    expect([ico.readUInt16LE(0), ico.readUInt16LE(2), ico.readUInt16LE(4), ico[6], ico[7], ico.readUInt16LE(12)]).to.deep.equal([
      0, 1, 1, 32, 32, 32,
    ]);
    expect(ico.readUInt32LE(18) + ico.readUInt32LE(14)).to.equal(ico.length);
    for (const page of ['/dashboard', '/dashboard/login', '/docs', '/docs/webhooks']) {
      const html = await (await fetch(srv.url + page)).text();
      expect(html, page).to.include('<link rel="icon" type="image/x-icon" href="/favicon.ico">');
    }
  });

  it('serves /docs, /docs/webhooks and /docs/init.js with a Content-Security-Policy, X-Frame-Options DENY and nosniff', async () => {
    for (const path of ['/docs', '/docs/webhooks', '/docs/init.js']) {
      const r = await fetch(srv.url + path);
      expect(r.status, path).to.equal(200);
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp, path)
        .to.include("default-src 'none'")
        .and.include("script-src 'self'")
        .and.include("frame-ancestors 'none'")
        .and.include("connect-src 'self'");
      expect(csp, path).to.not.match(/unsafe-inline|unsafe-eval|\*|https?:/);
      expect(r.headers.get('x-frame-options'), path).to.equal('DENY');
      expect(r.headers.get('x-content-type-options'), path).to.equal('nosniff');
    }
    // the one inline style of each page is allowed by its hash, nothing else inline
    const html = await (await fetch(`${srv.url}/docs`)).text();
    expect(html).to.not.match(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html.match(/<style>/g)).to.have.length(1);
    for (const path of ['/docs/assets/swagger-ui-bundle.js', '/openapi.json']) {
      expect((await fetch(srv.url + path)).headers.get('x-content-type-options'), path).to.equal('nosniff');
    }
  });

  it('leaves /metrics open when METRICS_TOKEN is not set', async () => {
    const r = await fetch(`${srv.url}/metrics`);
    expect(r.status).to.equal(200);
    expect(await r.text()).to.include('trackway_http_requests_total');
  });

  describe('with METRICS_TOKEN set', () => {
    const TOKEN = 'metrics-scrape-token-4f9c1e7a';
    let guarded: TestServer;
    before(async () => {
      guarded = await startTestServer({ METRICS_TOKEN: TOKEN });
    });
    after(() => guarded.stop());

    it('requires Authorization: Bearer <METRICS_TOKEN> on /metrics (401 otherwise)', async () => {
      for (const authorization of [
        undefined,
        '',
        'Bearer',
        `Bearer ${TOKEN}x`,
        `Bearer ${TOKEN.slice(0, -1)}`,
        `Basic ${TOKEN}`,
        TOKEN,
        `bearer  ${TOKEN}`,
      ]) {
        const r = await fetch(`${guarded.url}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
        expect(r.status, String(authorization)).to.equal(401);
        expect(r.headers.get('www-authenticate')).to.match(/^Bearer/);
        const body = (await r.json()) as { code: number };
        expect(body.code).to.equal(4010);
      }
      const ok = await fetch(`${guarded.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).to.equal(200);
      expect(await ok.text()).to.include('trackway_tracking_refused_total');
    });
  });
});
