import { gunzipSync, gzipSync } from 'node:zlib';
import vm from 'node:vm';
import { expect } from 'chai';
import { TRACKER_CACHE_CONTROL } from '../../src/tracking/tracker.handlers.ts';
import { getTracker, TRACKER_GZIP_LIMIT } from '../../src/tracking/tracker-bundle.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';

describe('browser tracker script', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.stop());

  it(`is at most ${TRACKER_GZIP_LIMIT} bytes gzipped`, async () => {
    const { code, gzipBytes } = await getTracker();
    const measured = gzipSync(code, { level: 9 }).length;
    console.log(`      tracker.js: ${code.length} bytes minified, ${measured} bytes gzipped (limit ${TRACKER_GZIP_LIMIT})`);
    expect(gzipBytes).to.equal(measured);
    expect(measured).to.be.at.most(TRACKER_GZIP_LIMIT);
  });

  it('serves the minified script with an ETag, public short caching and CORS', async () => {
    const { code, etag } = await getTracker();
    const r = await srv.api.get('/jsv1/tracker.js', { headers: { 'accept-encoding': 'identity' } });
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.match(/^text\/javascript/);
    expect(r.headers.get('content-encoding')).to.equal(null);
    expect(r.headers.get('etag'))
      .to.equal(etag)
      .and.match(/^"[A-Za-z0-9_-]+"$/);
    expect(r.headers.get('cache-control')).to.equal(TRACKER_CACHE_CONTROL);
    expect(r.headers.get('vary')).to.match(/accept-encoding/i);
    expect(r.headers.get('access-control-allow-origin')).to.equal('*');
    expect(r.text).to.equal(code);
    expect(r.text).to.match(/^\/\*! Trackway tracker \d+\.\d+\.\d+/);
    // minified: one line after the banner, no source comments, no imports
    expect(r.text.trim().split('\n')).to.have.length.at.most(3);
    expect(r.text).not.to.match(/\bimport\b|\brequire\(/);
    // it parses as a classic script
    expect(() => new vm.Script(r.text)).not.to.throw();
  });

  it('ignores a cache-busting ?v= that shops add to the snippet, and refuses other parameters', async () => {
    const plain = await srv.api.get('/jsv1/tracker.js');
    const busted = await srv.api.get('/jsv1/tracker.js?v=3');
    expect(busted.status).to.equal(200);
    expect(busted.text).to.equal(plain.text);
    expect((await srv.api.get('/jsv1/tracker.js?debug=1')).status).to.equal(400);
  });

  it('serves it gzipped to clients that accept gzip, with its own ETag', async () => {
    const { code, etag, gzipBytes } = await getTracker();
    // raw bytes: node's fetch would decompress, so ask node:http
    const res = await new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      import('node:http').then(({ get }) => {
        get(`${srv.url}/jsv1/tracker.js`, { headers: { 'accept-encoding': 'gzip' } }, (m) => {
          const chunks: Buffer[] = [];
          m.on('data', (c: Buffer) => chunks.push(c));
          m.on('end', () => resolve({ status: m.statusCode!, headers: m.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      }, reject);
    });
    expect(res.status).to.equal(200);
    expect(res.headers['content-encoding']).to.equal('gzip');
    expect(res.body.length).to.equal(gzipBytes);
    expect(gunzipSync(res.body).toString('utf8')).to.equal(code);
    expect(res.headers.etag).to.equal(`${etag.slice(0, -1)}-gz"`);
  });

  it('answers 304 without a body when If-None-Match names the current script', async () => {
    const first = await srv.api.get('/jsv1/tracker.js');
    const tag = first.headers.get('etag')!;
    for (const inm of [tag, `W/${tag}`, `"nope", ${tag}`, '*']) {
      const r = await srv.api.get('/jsv1/tracker.js', { headers: { 'if-none-match': inm } });
      expect(r.status, inm).to.equal(304);
      expect(r.text).to.equal('');
      expect(r.headers.get('etag')).to.equal(tag);
      expect(r.headers.get('cache-control')).to.equal(TRACKER_CACHE_CONTROL);
      expect(r.headers.get('access-control-allow-origin')).to.equal('*');
    }
    // the identity tag revalidates the gzip copy and the other way round
    const { etag } = await getTracker();
    const gz = `${etag.slice(0, -1)}-gz"`;
    const crossed = await srv.api.get('/jsv1/tracker.js', { headers: { 'if-none-match': gz, 'accept-encoding': 'identity' } });
    expect(crossed.status).to.equal(304);
    expect(crossed.headers.get('etag')).to.equal(etag);
  });

  it('answers 200 with the script when If-None-Match names another version', async () => {
    for (const inm of ['"tw-old"', 'W/"tw-old"', '"a", "b"', 'garbage']) {
      const r = await srv.api.get('/jsv1/tracker.js', { headers: { 'if-none-match': inm } });
      expect(r.status, inm).to.equal(200);
      expect(r.text.length).to.be.greaterThan(100);
    }
  });
});
