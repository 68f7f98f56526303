// The options the sender prepares once per origin and timeout
// (preparedOptions): got's per-request options are built from them, and
// their cacheOptions must come out empty. got spreads cacheOptions into
// node's request options on every request, and on Node 20's V8 a non-empty
// one made that object literal cost about 80 µs and 23 KB per request
// (BENCHMARKS.md, sixth stop). The check is on got's own per-request
// options, so a got release that fills them again fails here; and a request
// made from them still carries its body and headers.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import got, { Options } from 'got';
import { preparedOptions } from '../../src/webhooks/sender.client.ts';

const CACHE_KEYS = ['shared', 'cacheHeuristic', 'immutableMinTimeToLive', 'ignoreCargoCult'];
const client = got.extend({ followRedirect: false, retry: { limit: 0 }, throwHttpErrors: false, http2: false });
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/** got's options of one request from `defaults`, as got(url, options, defaults) makes them */
function perRequest(defaults: Options): Options {
  return new Options('http://127.0.0.1:1/hook', { body: '{}', headers: { 'webhook-id': 'msg_1' } }, defaults);
}

describe('the sender’s prepared got options', () => {
  after(() => {
    agents.http.destroy();
    agents.https.destroy();
  });

  it('give node request options without got’s cache settings', () => {
    const native = perRequest(preparedOptions(client, 5_000, agents)).createNativeRequestOptions() as Record<string, unknown>;
    for (const k of CACHE_KEYS) expect(native, k).not.to.have.property(k);
    expect(native.method).to.equal('POST');
    expect(native.agent).to.equal(agents.http);
  });

  it('differ from got’s own, which carry them (what the emptying removes)', () => {
    const own = new Options({ method: 'POST', isStream: true, timeout: { request: 5_000 }, agent: agents }, undefined, client.defaults.options);
    const native = perRequest(own).createNativeRequestOptions() as Record<string, unknown>;
    for (const k of CACHE_KEYS) expect(native, k).to.have.property(k);
  });

  it('still send the body and headers of each request, with the timeout', async () => {
    const seen: { body: string; id: string | undefined }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        seen.push({ body, id: req.headers['webhook-id'] as string | undefined });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const prepared = preparedOptions(client, 5_000, agents);
      expect(prepared.timeout.request).to.equal(5_000);
      const request = client as unknown as (u: string, o: object, d: Options) => ReturnType<typeof got.stream>;
      for (const n of [1, 2]) {
        const status = await new Promise<number>((resolve, reject) => {
          const s = request(`http://127.0.0.1:${port}/hook`, { body: `{"n":${n}}`, headers: { 'webhook-id': `msg_${n}` } }, prepared);
          let code = 0;
          s.on('response', (res: http.IncomingMessage) => (code = res.statusCode ?? 0));
          s.on('data', () => {});
          s.on('end', () => resolve(code));
          s.on('error', reject);
        });
        expect(status).to.equal(204);
      }
      expect(seen).to.deep.equal([
        { body: '{"n":1}', id: 'msg_1' },
        { body: '{"n":2}', id: 'msg_2' },
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
