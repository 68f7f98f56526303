// Limits (docs/design.md "Limits" and "Trust"): TRACKING_RATE_LIMIT per client IP and per organisation
// on /jsv1 and the learning endpoint (on by default), request size limits
// for every area (Content-Length and chunked), and slow clients cut off by
// HTTP_HEADERS_TIMEOUT / HTTP_REQUEST_TIMEOUT without holding the server.
import net from 'node:net';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { BODY_LIMITS } from '../../src/http/app.ts';
import { schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Merchant, newAccount, newMerchant } from '../support/accounts.ts';
import { httpRequest, rawRequest } from '../support/raw-http.ts';
import { expectLimited } from '../support/expect.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf, TrackingError } from '../support/client.ts';

const LIMIT = 5;

describe('limits', function () {
  this.timeout(60_000);

  describe(`TRACKING_RATE_LIMIT=${LIMIT}/1m`, () => {
    let srv: TestServer;
    let n = 0;
    /** a documentation-range address no other test uses */
    const ip = () => `203.0.113.${(++n % 250) + 1}`;
    const merchants: Merchant[] = [];
    const merchant = () => merchants.pop()!;

    before(async () => {
      srv = await startTestServer({ TRACKING_RATE_LIMIT: `${LIMIT}/1m`, TRUST_PROXY: 'true' });
      const account = await newAccount(srv);
      for (let i = 0; i < 6; i++) merchants.push(await newMerchant(srv, account));
    });
    after(() => srv.stop());

    const view = (orgId: number, from: string) =>
      srv.api.post<TrackingError>(
        `/jsv1/${orgId}/r1/c1/null/event/view`,
        { page: 'https://shop.example/' },
        { headers: { 'x-forwarded-for': from } },
      );
    const learn = (token: string, from: string) =>
      srv.api.post<BodyOf<'submitLearningEvent', 400>>(
        '/rest/v1/learn/event',
        { org_token: token, eventName: 'e', eventVal: 'v' },
        { headers: { 'x-forwarded-for': from } },
      );

    it('limits /jsv1 per client IP: the address is refused for any organisation, others go on', async () => {
      const [a, b] = [merchant(), merchant()];
      const from = ip();
      for (let i = 0; i < LIMIT; i++) expect((await view(a.organisation.id, from)).status).to.equal(202);
      expectLimited(await view(a.organisation.id, from), { error: 'rate_limited' });
      expectLimited(await view(b.organisation.id, from), { error: 'rate_limited' });
      const id = await srv.api.get(`/jsv1/identify/${b.organisation.id}/r1/c1/${b64url({ email: 'x@y.example' })}`, {
        headers: { 'x-forwarded-for': from },
      });
      expectLimited(id, { error: 'rate_limited' });
      expect((await view(b.organisation.id, ip())).status).to.equal(202);
    });

    it('limits /jsv1 per organisation, whatever the addresses', async () => {
      const c = merchant();
      for (let i = 0; i < LIMIT; i++) expect((await view(c.organisation.id, ip())).status).to.equal(202);
      expectLimited(await view(c.organisation.id, ip()), { error: 'rate_limited' });
      const pixel = await srv.api.get(`/jsv1/${c.organisation.id}/r1/c1/null/event/view?page=https%3A%2F%2Fshop.example%2F`, {
        headers: { 'x-forwarded-for': ip() },
      });
      expectLimited(pixel, { error: 'rate_limited' });
    });

    it('counts an organisation only once it is known: unknown ids make no buckets and are never 429 from new addresses', async () => {
      for (let i = 0; i < 4 * LIMIT; i++) {
        const r = await view(900_000_000 + (i % 2), ip());
        expect(r.status).to.equal(404);
        expect(r.body.error).to.equal('unknown_organisation');
      }
    });

    it('limits the learning endpoint per client IP and per organisation, in the analytics shape', async () => {
      const [d, e] = [merchant(), merchant()];
      const from = ip();
      for (let i = 0; i < LIMIT; i++) expect((await learn(d.organisation.token, from)).status).to.equal(200);
      expectLimited(await learn(e.organisation.token, from), { status: 'failed', code: 5129 });
      for (let i = 0; i < LIMIT - 1; i++) expect((await learn(e.organisation.token, ip())).status).to.equal(200);
      // e has one left: one more address spends it, the next is refused for the organisation
      expect((await learn(e.organisation.token, ip())).status).to.equal(200);
      expectLimited(await learn(e.organisation.token, ip()), { status: 'failed', code: 5129 });
      // an unknown token is 400/5104 however often it comes from new addresses
      for (let i = 0; i < 2 * LIMIT; i++) expect((await learn('no-such-token', ip())).body.code).to.equal(5104);
    });

    it('is on by default (sized for a busy shop behind one NAT: test/reliability/tracking-limits.test.ts)', async () => {
      expect(loadConfig({}).trackingLimits.ip).to.deep.equal({ limit: 6000, windowMs: 60_000 });
      const plain = await startTestServer();
      try {
        const account = await newAccount(plain);
        const m = await newMerchant(plain, account);
        for (let i = 0; i < 4 * LIMIT; i++) {
          const r = await plain.api.post(`/jsv1/${m.organisation.id}/r1/c1/null/event/view`, { page: 'https://shop.example/' });
          expect(r.status).to.equal(202);
        }
      } finally {
        await plain.stop();
      }
    });
  });

  describe('request size limits (413) in every area', () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer({ LOGIN_RATE_LIMIT: 'off' });
    });
    after(() => srv.stop());

    const areas = [
      { area: 'tracking', path: '/jsv1/1/r/c/null/event/view', field: 'page', shape: { error: 'payload_too_large' } },
      { area: 'platform', path: '/v1/rest/acme/users/login', field: 'password', shape: { code: 4130 } },
      { area: 'analytics', path: '/rest/v1/learn/event', field: 'eventName', shape: { status: 'failed', code: 5113 } },
    ] as const;

    for (const a of areas) {
      const limit = BODY_LIMITS[a.area];
      const body = (size: number) => {
        const head = `{"${a.field}":"`;
        return head + 'x'.repeat(size - head.length - 2) + '"}';
      };

      it(`${a.area}: ${limit} bytes at most, with Content-Length or chunked`, async () => {
        const over = await srv.api.request('POST', a.path, { raw: body(limit + 1), headers: { 'content-type': 'application/json' } });
        expect(over.status).to.equal(413);
        expect(over.body).to.include(a.shape);
        // exactly at the limit: read and judged on its content (never 413)
        const at = await srv.api.request('POST', a.path, { raw: body(limit), headers: { 'content-type': 'application/json' } });
        expect(at.status).to.not.equal(413);
        expect(at.status).to.be.below(500);
        for (const size of [limit + 1, 4 * limit]) {
          const chunks = Math.ceil(size / 16_384);
          const text = body(size);
          const stream = new ReadableStream({
            start(c) {
              for (let i = 0; i < chunks; i++) c.enqueue(new TextEncoder().encode(text.slice(i * 16_384, (i + 1) * 16_384)));
              c.close();
            },
          });
          const res = await fetch(srv.url + a.path, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: stream,
            duplex: 'half',
          } as RequestInit);
          expect(res.status, `chunked ${size}`).to.equal(413);
          expect(await res.json()).to.include(a.shape);
        }
        expect((await srv.api.get('/healthz')).status).to.equal(200);
      });
    }
  });

  describe("what node's HTTP parser refuses", () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer();
    });
    after(() => srv.stop());

    it("answers headers over 16 KB with 431 and a malformed request with 400, in the area's shape, and keeps serving", async () => {
      const cases = [
        ['/v1/rest/acme/organisations', { 'X-Big': 'b'.repeat(20_000) }, 431, { code: 4310 }],
        ['/jsv1/1/r/c/null/event/view', { 'X-Big': 'b'.repeat(20_000) }, 431, { error: 'headers_too_large' }],
        ['/rest/v1/learn/event', { 'Content-Length': 'abc' }, 400, { status: 'failed', code: 5100 }],
        ['/jsv1/1/r/c/null/event/view', { 'Transfer-Encoding': 'chunked', 'Content-Length': '3' }, 400, { error: 'invalid_request' }],
      ] as const;
      for (const [target, headers, status, shape] of cases) {
        const r = await rawRequest(srv.url, httpRequest('POST', target, headers));
        expect(r.status, `${target} ${Object.keys(headers).join(',')}`).to.equal(status);
        expect(r.body).to.include(shape);
        expect(r.headers.get('x-request-id')).to.be.a('string');
      }
      expect((await srv.api.get('/healthz')).status).to.equal(200);
    });
  });

  describe('slow clients (HTTP_HEADERS_TIMEOUT=1s, HTTP_REQUEST_TIMEOUT=2s)', () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer({ HTTP_HEADERS_TIMEOUT: '1s', HTTP_REQUEST_TIMEOUT: '2s' });
    });
    after(() => srv.stop());

    it('reads both from the environment, 10 s and 30 s by default', () => {
      expect(loadConfig({})).to.include({ httpHeadersTimeoutMs: 10_000, httpRequestTimeoutMs: 30_000 });
      expect(loadConfig({ HTTP_HEADERS_TIMEOUT: '1s', HTTP_REQUEST_TIMEOUT: '2s' })).to.include({
        httpHeadersTimeoutMs: 1000,
        httpRequestTimeoutMs: 2000,
      });
      expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT: '5s', HTTP_REQUEST_TIMEOUT: '1s' })).to.throw(/HTTP_REQUEST_TIMEOUT/);
      expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT: 'soon' })).to.throw(/HTTP_HEADERS_TIMEOUT/);
    });

    interface Trickle {
      closed: Promise<string>;
      stop(): void;
    }

    /** Sends `head` and then one more byte of `rest` every 100 ms; resolves `closed` with what the server answered. */
    function trickle(head: string, rest: string): Trickle {
      const { port } = new URL(srv.url);
      const socket = net.connect({ host: '127.0.0.1', port: Number(port) });
      let answer = '';
      let i = 0;
      const timer = setInterval(() => {
        if (socket.writable && i < rest.length) socket.write(rest[i++]!);
      }, 100);
      socket.on('data', (d: Buffer) => (answer += d.toString('utf8')));
      socket.on('error', () => {});
      socket.write(head);
      const closed = new Promise<string>((resolve) =>
        socket.on('close', () => {
          clearInterval(timer);
          resolve(answer);
        }),
      );
      return { closed, stop: () => socket.destroy() };
    }

    function expectTimeoutAnswer(answer: string, shape: Record<string, unknown>) {
      // the connection is closed, after a 408 in the area's shape
      expect(answer).to.match(/^HTTP\/1\.1 408 /);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
      expect(body).to.include(shape);
    }

    it('cuts off clients that trickle their headers (slowloris) and keeps serving everyone else', async () => {
      const slow = Array.from({ length: 25 }, (_, i) =>
        trickle(`GET /v1/rest/acme/organisations HTTP/1.1\r\nHost: x\r\n`, `X-Slow-${i}: ${'a'.repeat(200)}\r\n`),
      );
      try {
        // while they trickle, the server answers others
        for (let i = 0; i < 5; i++) expect((await srv.api.get('/healthz')).status).to.equal(200);
        const answers = await Promise.all(slow.map((s) => s.closed));
        for (const a of answers) expectTimeoutAnswer(a, { code: 4080 });
      } finally {
        for (const s of slow) s.stop();
      }
      expect((await srv.api.get('/healthz')).status).to.equal(200);
    });

    it('cuts off a body that is sent too slowly, on every area', async () => {
      const paths = [
        ['/jsv1/1/r/c/null/event/view', { error: 'request_timeout' }],
        ['/v1/rest/acme/users/login', { code: 4080 }],
        ['/rest/v1/learn/event', { status: 'failed', code: 5108 }],
      ] as const;
      const slow = paths.map(([p]) => {
        const body = JSON.stringify({ page: 'https://shop.example/'.padEnd(300, 'x') });
        return trickle(`POST ${p} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body);
      });
      try {
        expect((await srv.api.get('/healthz')).status).to.equal(200);
        const answers = await Promise.all(slow.map((s) => s.closed));
        answers.forEach((a, i) => expectTimeoutAnswer(a, paths[i]![1]));
      } finally {
        for (const s of slow) s.stop();
      }
      expect((await srv.api.get('/healthz')).status).to.equal(200);
    });

    it('answers a request that arrives in time normally', async () => {
      const r = await srv.api.post('/jsv1/1/r/c/null/event/view', { page: 42 });
      expect(r.status).to.equal(400);
      expect(schemaValidator('TrackingError')(r.body)).to.equal(true);
    });
  });
});
