// The delivery log and the test delivery through the platform API, the
// receiver guide at /docs/webhooks, and the dispatcher's metrics.
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import type { BodyOf, PlatformError } from '../support/client.ts';
import { schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Tenant, type TestIntegration, createIntegration, createTenant, enqueue, eventually, matchedBody } from '../support/webhook-fixtures.ts';

describe('webhook deliveries API', function () {
  this.timeout(30_000);
  let srv: TestServer;
  let tenant: Tenant;
  let other: Tenant;
  let ok: TestReceiver;
  let bad: TestReceiver;
  let good: TestIntegration;
  let rejecting: TestIntegration;
  let goodIds: number[];
  let badIds: number[];

  const path = (t: Tenant, rest: string) => `/v1/rest/${t.platform}${rest}`;

  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms' }, { dispatcher: true });
    tenant = await createTenant(srv.deps.db, srv.deps.tokens);
    other = await createTenant(srv.deps.db, srv.deps.tokens, 'other');
    ok = await TestReceiver.start(() => ({ status: 200, body: 'thanks' }));
    bad = await TestReceiver.start(() => ({ status: 410, body: 'gone' }));
    good = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: ok.url });
    rejecting = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: bad.url });
    goodIds = await enqueue(
      srv.deps.db,
      good,
      [1, 2, 3, 4, 5].map((n) => ({ kind: 'matched' as const, body: matchedBody(tenant.orgId, `c${n}@example.com`) })),
    );
    badIds = await enqueue(srv.deps.db, rejecting, [
      { kind: 'matched', body: matchedBody(tenant.orgId, 'x@example.com') },
      { kind: 'matched', body: matchedBody(tenant.orgId, 'y@example.com') },
    ]);
    await eventually(async () => {
      const r = await srv.api.get<BodyOf<'listDeliveries'>>(path(tenant, `/organisations/${tenant.orgId}/deliveries?status=pending`), {
        token: tenant.token,
      });
      return r.body.items.length === 0 ? true : undefined;
    });
  });
  after(async () => {
    await ok.close();
    await bad.close();
    await srv.stop();
  });

  it('lists an organisation’s deliveries newest first, with payload and attempts, page by page', async () => {
    const all = await srv.api.get<BodyOf<'listDeliveries'>>(path(tenant, `/organisations/${tenant.orgId}/deliveries`), { token: tenant.token });
    expect(all.status).to.equal(200);
    expect(all.body.next_cursor).to.equal(null);
    const ids = all.body.items.map((d) => d.id);
    expect(ids).to.deep.equal([...goodIds, ...badIds].sort((a, b) => b - a));
    const first = all.body.items.find((d) => d.id === goodIds[0]);
    expect(first).to.include({ status: 'delivered', attempts_count: 1, integration_id: good.id, org_id: tenant.orgId, kind: 'matched' });
    expect(first!.payload).to.deep.equal(matchedBody(tenant.orgId, 'c1@example.com'));
    expect(first!.attempts[0]).to.include({ status_code: 200, response_excerpt: 'thanks' });

    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `?limit=3&cursor=${cursor}` : '?limit=3';
      const page = await srv.api.get<BodyOf<'listDeliveries'>>(path(tenant, `/organisations/${tenant.orgId}/deliveries${q}`), {
        token: tenant.token,
      });
      expect(page.status).to.equal(200);
      expect(page.body.items.length).to.be.at.most(3);
      seen.push(...page.body.items.map((d) => d.id));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(seen).to.deep.equal(ids);
  });

  it('filters by status and integration_id', async () => {
    const failed = await srv.api.get<BodyOf<'listDeliveries'>>(path(tenant, `/organisations/${tenant.orgId}/deliveries?status=failed`), {
      token: tenant.token,
    });
    expect(failed.body.items.map((d) => d.id)).to.deep.equal([...badIds].reverse());
    for (const d of failed.body.items) {
      expect(d).to.include({ status: 'failed', last_error: 'HTTP 410', attempts_count: 1 });
      expect(d.attempts[0]).to.include({ status_code: 410, response_excerpt: 'gone' });
    }
    const byIntegration = await srv.api.get<BodyOf<'listDeliveries'>>(
      path(tenant, `/organisations/${tenant.orgId}/deliveries?integration_id=${good.id}&limit=2`),
      {
        token: tenant.token,
      },
    );
    expect(byIntegration.body.items.map((d) => d.id)).to.deep.equal([goodIds[4], goodIds[3]]);
    const next = await srv.api.get<BodyOf<'listDeliveries'>>(
      path(tenant, `/organisations/${tenant.orgId}/deliveries?integration_id=${good.id}&limit=2&cursor=${byIntegration.body.next_cursor}`),
      { token: tenant.token },
    );
    expect(next.body.items.map((d) => d.id)).to.deep.equal([goodIds[2], goodIds[1]]);
    const none = await srv.api.get(path(tenant, `/organisations/${tenant.orgId}/deliveries?status=cancelled`), { token: tenant.token });
    expect(none.body).to.deep.equal({ items: [], next_cursor: null });
  });

  it('answers a bad cursor, or one made with other filters, with 400/4000', async () => {
    const garbage = await srv.api.get<PlatformError>(path(tenant, `/organisations/${tenant.orgId}/deliveries?cursor=nonsense`), {
      token: tenant.token,
    });
    expect(garbage.status).to.equal(400);
    expect(garbage.body.code).to.equal(4000);
    const page = await srv.api.get<BodyOf<'listDeliveries'>>(path(tenant, `/organisations/${tenant.orgId}/deliveries?limit=1`), {
      token: tenant.token,
    });
    const reused = await srv.api.get<PlatformError>(
      path(tenant, `/organisations/${tenant.orgId}/deliveries?status=failed&cursor=${page.body.next_cursor}`),
      {
        token: tenant.token,
      },
    );
    expect(reused.status).to.equal(400);
    expect(reused.body.code).to.equal(4000);
    const limit = await srv.api.get(path(tenant, `/organisations/${tenant.orgId}/deliveries?limit=201`), { token: tenant.token });
    expect(limit.status).to.equal(400);
  });

  it('keeps tenants apart: 403 for another’s organisation, 404 for another’s delivery', async () => {
    const list = await srv.api.get<PlatformError>(path(other, `/organisations/${tenant.orgId}/deliveries`), { token: other.token });
    expect(list.status).to.equal(403);
    expect(list.body.code).to.equal(4030);
    const one = await srv.api.get<PlatformError>(path(other, `/deliveries/${goodIds[0]}`), { token: other.token });
    expect(one.status).to.equal(404);
    expect(one.body.code).to.equal(4040);
    const retry = await srv.api.post<PlatformError>(path(other, `/deliveries/${badIds[0]}/retry`), undefined, { token: other.token });
    expect(retry.status).to.equal(404);
    expect(retry.body.code).to.equal(4040);
    const missing = await srv.api.get(path(tenant, `/deliveries/999999999`), { token: tenant.token });
    expect(missing.status).to.equal(404);
    const anonymous = await srv.api.get(path(tenant, `/organisations/${tenant.orgId}/deliveries`));
    expect(anonymous.status).to.equal(401);
    const ownList = await srv.api.get<BodyOf<'listDeliveries'>>(path(other, `/organisations/${other.orgId}/deliveries`), { token: other.token });
    expect(ownList.body.items).to.deep.equal([]);
  });

  it('answers 409/4090 when retrying a delivery that is not failed or cancelled', async () => {
    const r = await srv.api.post<PlatformError>(path(tenant, `/deliveries/${goodIds[0]}/retry`), undefined, { token: tenant.token });
    expect(r.status).to.equal(409);
    expect(r.body.code).to.equal(4090);
  });

  describe('testIntegration', () => {
    it('posts one signed sample contact match now, marked as a test, on the organisation’s domain, and stores nothing', async () => {
      const before = ok.requests.length;
      const r = await srv.api.post<BodyOf<'testIntegration'>>(path(tenant, `/integration/${good.id}/test`), undefined, { token: tenant.token });
      expect(r.status).to.equal(200);
      expect(r.body).to.include({ delivered: true, status_code: 200, error: null, response_excerpt: 'thanks' });
      expect(ok.requests).to.have.length(before + 1);
      const req = ok.requests[before]!;
      const body = new Webhook(good.signingSecret).verify(req.body, req.headers as Record<string, string>) as Record<string, unknown>;
      const v = schemaValidator('ContactMatchedNotification');
      expect(v(body), JSON.stringify(v.errors)).to.equal(true);
      expect(body).to.include({ medium: 'matched', org_id: String(tenant.orgId), test: true, contact: 'test.contact@example.invalid' });
      expect(req.headers['trackway-test']).to.equal('true');
      expect(req.headers['webhook-id']).to.match(/^msg_test_/);
      // the organisation's own domain (createTenant's shop-<tag>.example.com), not a placeholder one
      const org = await srv.deps.db.selectFrom('organisations').select('domain_key').where('id', '=', tenant.orgId).executeTakeFirstOrThrow();
      const urls = [body.last_addtocart, ...(body.last_view as string[])] as string[];
      expect(urls).to.have.length(2);
      for (const u of urls) expect(new URL(u).hostname).to.equal(org.domain_key);
      // real deliveries carry neither mark
      const real = ok.requests.slice(0, before);
      expect(real).to.have.length(goodIds.length);
      for (const d of real) {
        expect(d.headers['trackway-test']).to.equal(undefined);
        expect(JSON.parse(d.body)).not.to.have.property('test');
      }
      const list = await srv.api.get<BodyOf<'listDeliveries'>>(path(tenant, `/organisations/${tenant.orgId}/deliveries`), { token: tenant.token });
      expect(list.body.items).to.have.length(goodIds.length + badIds.length);
    });

    it('reports a failing endpoint without retrying, and a slow one as a timeout', async () => {
      const before = bad.requests.length;
      const r = await srv.api.post(path(tenant, `/integration/${rejecting.id}/test`), undefined, { token: tenant.token });
      expect(r.body).to.include({ delivered: false, status_code: 410, error: null, response_excerpt: 'gone' });
      expect(bad.requests).to.have.length(before + 1);

      const slow = await TestReceiver.start(() => ({ status: 200, delayMs: 2500 }));
      try {
        const hook = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: slow.url, httpTimeout: 1, active: false });
        const t = await srv.api.post<BodyOf<'testIntegration'>>(path(tenant, `/integration/${hook.id}/test`), undefined, { token: tenant.token });
        expect(t.status).to.equal(200);
        expect(t.body).to.include({ delivered: false, status_code: null, response_excerpt: null });
        expect(t.body.error).to.match(/timeout/i);
        expect(t.body.duration_ms).to.be.at.least(900);
      } finally {
        await slow.close();
      }
    });

    it('answers 404 for an integration of another organisation', async () => {
      const r = await srv.api.post<PlatformError>(path(other, `/integration/${good.id}/test`), undefined, { token: other.token });
      expect(r.status).to.equal(404);
      expect(r.body.code).to.equal(4040);
    });
  });

  it('serves the receiver guide at /docs/webhooks with the configured schedule', async () => {
    const r = await srv.api.get('/docs/webhooks', { unchecked: true });
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.match(/^text\/html/);
    for (const text of [
      'webhook-signature',
      'webhook-id',
      'standardwebhooks',
      'whsec_',
      '100 ms, 200 ms',
      'at most 3 attempts',
      'Retry-After',
      '"medium": "matched"',
      '"medium": "event"',
      '"medium": "erased"',
      'Trackway-Test',
      '"test": true',
      'test.contact@example.invalid',
    ]) {
      expect(r.text).to.include(text);
    }
  });

  it('exposes delivery metrics', async () => {
    const r = await srv.api.get('/metrics', { unchecked: true });
    expect(r.text).to.match(/trackway_webhook_deliveries_attempted_total\{kind="matched"\} \d+/);
    expect(r.text).to.match(/trackway_webhook_deliveries_succeeded_total\{kind="matched"\} 5/);
    expect(r.text).to.match(/trackway_webhook_deliveries_failed_total\{kind="matched"\} 2/);
    expect(r.text).to.match(/trackway_webhook_attempt_duration_seconds_bucket\{le="[^"]+",result="2xx"\} \d+/);
    expect(r.text).to.match(/trackway_webhook_pending_deliveries 0/);
    // every attempt's outcome was written by an outcome statement, and claimed by a claim statement
    const total = (re: RegExp) => [...r.text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
    const attempts = total(/^trackway_webhook_deliveries_attempted_total\{[^}]*\} (\d+)$/gm);
    expect(attempts).to.be.greaterThan(0);
    expect(total(/^trackway_webhook_statement_rows_sum\{statement="outcome"\} (\d+)$/gm)).to.equal(attempts);
    expect(total(/^trackway_webhook_statement_rows_sum\{statement="claim"\} (\d+)$/gm)).to.be.at.least(attempts);
    expect(total(/^trackway_webhook_statement_rows_count\{statement="claim"\} (\d+)$/gm)).to.be.greaterThan(0);
  });
});
