import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { newAccount } from '../support/accounts.ts';
import type { AnalyticsFailure, PlatformError, TrackingError } from '../support/client.ts';

describe('http foundation', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.stop());

  it('answers /healthz and /readyz', async () => {
    expect((await srv.api.get('/healthz')).body).to.deep.equal({ status: 'ok' });
    expect((await srv.api.get('/readyz')).body).to.deep.equal({ status: 'ready' });
  });

  it('sends an X-Request-Id on every response and echoes a sane incoming one', async () => {
    const r = await srv.api.get('/healthz', { headers: { 'x-request-id': 'abc-123' } });
    expect(r.headers.get('x-request-id')).to.equal('abc-123');
    const r2 = await srv.api.get('/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(r2.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('answers unknown routes with a JSON 404 in the area shape', async () => {
    const p = await srv.api.get('/nope');
    expect(p.status).to.equal(404);
    expect(p.body).to.include({ code: 4040 });
    const t = await srv.api.get('/jsv1/nope');
    expect(t.status).to.equal(404);
    expect(t.body).to.include({ error: 'not_found' });
    const a = await srv.api.get('/rest/v1/nope');
    expect(a.status).to.equal(404);
    expect(a.body).to.include({ status: 'failed', code: 5105 });
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const r = await srv.api.request('DELETE', '/healthz');
    expect(r.status).to.equal(405);
    expect(r.body).to.include({ code: 4050 });
    expect(r.headers.get('allow')).to.equal('GET');
  });

  it('says what is wrong in words: no regular expression, constants and tokens named plainly', async () => {
    const noRegex = (text: string) => expect(text).not.to.match(/pattern|\^\[|\$\/|\\s|\{0,/);
    const upper = await srv.api.post<PlatformError>('/v1/rest/ACME/users/login', { email: 'a@b.co', password: 'x' });
    expect(upper.status).to.equal(400);
    expect(upper.body.errors).to.deep.include({
      path: 'path.platform_name',
      message: 'must be 1 to 63 lower-case letters, digits, "-" or "_", starting with a letter or digit',
    });
    noRegex(upper.text);
    const account = await newAccount(srv);
    const hook = await srv.api.post<PlatformError>(
      `/v1/rest/${account.platform}/integration`,
      { org_id: 1, active: true, type: 'webhook', data: { endpoint: 'https://hooks.example.com/x' } },
      { token: account.token },
    );
    expect(hook.status).to.equal(400);
    expect(hook.body.errors).to.deep.include({ path: '/type', message: 'must equal "WEBHOOK"' });
    noRegex(hook.text);
    const email = await srv.api.get<TrackingError>(`/jsv1/identify/1/r1/c1/${Buffer.from(JSON.stringify({ email: 'jane@' })).toString('base64url')}`);
    expect(email.body.error).to.equal('invalid_payload');
    noRegex(email.text);
    // a Bearer header of the right shape with a token that is not ours: the token is wrong, not the header
    const wrongToken = await srv.api.get<PlatformError>(`/v1/rest/${account.platform}/organisations`, { headers: { authorization: 'Bearer abc' } });
    expect([wrongToken.status, wrongToken.body.code, wrongToken.body.message]).to.deep.equal([401, 4010, 'The bearer token is invalid or expired']);
    const wrongScheme = await srv.api.get<PlatformError>(`/v1/rest/${account.platform}/organisations`, { headers: { authorization: 'Basic abc' } });
    expect(wrongScheme.body.message).to.equal('The Authorization header must be "Bearer <token>"');
  });

  it('answers validation failures in each area shape', async () => {
    const p = await srv.api.post<PlatformError>('/v1/rest/acme/users/login', { email: 'a@b.co' });
    expect(p.status).to.equal(400);
    expect(p.body.code).to.equal(4000);
    expect(p.body.errors).to.deep.include({ path: '/password', message: 'is required' });
    const t = await srv.api.post<TrackingError>('/jsv1/1/r/c/null/event/view', { page: 42 });
    expect(t.status).to.equal(400);
    expect(t.body.error).to.equal('invalid_request');
    expect(t.body.message).to.include('/page');
    const a = await srv.api.post('/rest/v1/learn/event', { eventName: 'x' });
    expect(a.status).to.equal(400);
    expect(a.body).to.include({ status: 'failed', code: 5100 });
  });

  it('answers unparsable JSON with 400, never 500', async () => {
    for (const path of ['/v1/rest/acme/users/login', '/jsv1/1/r/c/null/event/view', '/rest/v1/learn/event']) {
      for (const raw of ['{bad', '"a string"', '12', '']) {
        const r = await srv.api.request('POST', path, { raw, headers: { 'content-type': 'application/json' } });
        expect(r.status, `${path} ${raw}`).to.equal(400);
      }
    }
  });

  it('accepts text/plain JSON on /jsv1 only (what sendBeacon sends)', async () => {
    const t = await srv.api.request('POST', '/jsv1/1/r/c/null/event/view', {
      raw: JSON.stringify({ page: 7 }),
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
    });
    expect(t.status).to.equal(400); // parsed as JSON, then validated: page must be a string
    const p = await srv.api.request<PlatformError>('POST', '/v1/rest/acme/users/login', {
      raw: JSON.stringify({ email: 'a@b.co', password: 'x' }),
      headers: { 'content-type': 'text/plain' },
    });
    expect(p.status).to.equal(415);
    expect(p.body.code).to.equal(4150);
  });

  it('refuses bodies over the area limit with 413', async () => {
    const big = (n: number) => JSON.stringify({ page: 'https://shop.example/' + 'a'.repeat(n) });
    const t = await srv.api.request<TrackingError>('POST', '/jsv1/1/r/c/null/event/view', {
      raw: big(70 * 1024),
      headers: { 'content-type': 'application/json' },
    });
    expect(t.status).to.equal(413);
    expect(t.body.error).to.equal('payload_too_large');
    const p = await srv.api.request<PlatformError>('POST', '/v1/rest/acme/users/login', {
      raw: JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(1100 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(p.status).to.equal(413);
    expect(p.body.code).to.equal(4130);
    const a = await srv.api.request<AnalyticsFailure>('POST', '/rest/v1/learn/event', {
      raw: JSON.stringify({ eventName: 'x'.repeat(1100 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(a.status).to.equal(413);
    expect(a.body.code).to.equal(5113);
  });

  it('counts a chunked body without Content-Length against the limit too', async () => {
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < 80; i++) c.enqueue(new TextEncoder().encode(i === 0 ? '{"page":"' : 'a'.repeat(1024)));
        c.enqueue(new TextEncoder().encode('"}'));
        c.close();
      },
    });
    const res = await fetch(`${srv.url}/jsv1/1/r/c/null/event/view`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).to.equal(413);
  });

  it('answers CORS preflight on /jsv1 and allows any origin', async () => {
    const r = await fetch(`${srv.url}/jsv1/1/r/c/null/event/view`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(r.status).to.equal(204);
    expect(r.headers.get('access-control-allow-origin')).to.equal('*');
    expect(r.headers.get('access-control-allow-methods')).to.include('POST');
    const g = await srv.api.get('/jsv1/nope');
    expect(g.headers.get('access-control-allow-origin')).to.equal('*');
    const p = await srv.api.get('/healthz');
    expect(p.headers.get('access-control-allow-origin')).to.equal(null);
  });

  it('serves Prometheus metrics with request counts by operation', async () => {
    await srv.api.get('/healthz');
    const r = await srv.api.get('/metrics', { unchecked: true });
    expect(r.status).to.equal(200);
    expect(r.text).to.match(/trackway_http_requests_total\{operation="getHealth",status="200"\} \d+/);
    expect(r.text).to.include('trackway_process_resident_memory_bytes');
  });

  it('serves the API reference and its assets from the npm registry, no CDN', async () => {
    const page = await srv.api.get('/docs', { unchecked: true });
    expect(page.status).to.equal(200);
    expect(page.text).to.include('/docs/assets/swagger-ui-bundle.js');
    expect(page.text).to.not.match(/https?:\/\/(?!localhost)/);
    const js = await srv.api.get('/docs/assets/swagger-ui-bundle.js', { unchecked: true });
    expect(js.status).to.equal(200);
    expect(js.headers.get('content-type')).to.match(/javascript/);
    const missing = await srv.api.get('/docs/assets/secret.txt');
    expect(missing.status).to.equal(404);
  });
});
