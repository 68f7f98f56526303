// Webhook delivery end to end: the dispatcher inside the server posts to real
// receivers on 127.0.0.1; outcomes are read back through the platform API.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { contactMatchedPayload } from '../../src/webhooks/payloads/contact-matched.payload.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';
import { doc, schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import {
  type Tenant,
  type TestIntegration,
  createIntegration,
  createTenant,
  deactivate,
  enqueue,
  eventually,
  exportedBody,
  matchedBody,
  reactivate,
} from '../support/webhook-fixtures.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('webhook delivery', function () {
  this.timeout(30_000);
  let srv: TestServer;
  let tenant: Tenant;
  const receivers: TestReceiver[] = [];

  before(async () => {
    srv = await startTestServer(
      { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms', PUBLIC_URL: 'http://trackway.test' },
      { dispatcher: true },
    );
  });
  beforeEach(async () => {
    tenant = await createTenant(srv.deps.db, srv.deps.tokens);
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await srv.stop();
  });

  async function receiver(...args: Parameters<typeof TestReceiver.start>): Promise<TestReceiver> {
    const r = await TestReceiver.start(...args);
    receivers.push(r);
    return r;
  }

  function integration(r: TestReceiver, input: Partial<Parameters<typeof createIntegration>[3]> = {}): Promise<TestIntegration> {
    return createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: r.url, ...input });
  }

  async function delivery(id: number) {
    const r = await srv.api.get<BodyOf<'getDelivery'>>(`/v1/rest/${tenant.platform}/deliveries/${id}`, { token: tenant.token });
    expect(r.status).to.equal(200);
    return r.body;
  }

  /** The delivery once it is in `status` with every attempt recorded (and at least `minAttempts`). */
  function settled(id: number, status: string, minAttempts = 0) {
    return eventually(
      async () => {
        const d = await delivery(id);
        // the outcome and its attempt are written together
        return d.status === status && d.attempts.length === d.attempts_count && d.attempts_count >= minAttempts ? d : undefined;
      },
      10_000,
      `delivery ${id} to be ${status}`,
    );
  }

  it('posts both notification kinds with exact bodies, every header and a verifiable signature', async () => {
    const r = await receiver(() => ({ status: 200, body: '{"ok":true}' }));
    const hook = await integration(r, { authToken: 'tok_live_9f3a1c' });
    const matched = contactMatchedPayload({
      orgId: tenant.orgId,
      contact: 'jane.doe@example.com',
      type: 'EMAIL',
      at: new Date('2024-05-14T23:59:59Z'),
      visitor: { coreId: 'c-9', roamingId: 'r-9', corexId: 'customer-9' },
      lastView: ['https://shop.example.com/p/1', 'https://shop.example.com/p/2', 'https://shop.example.com/p/3', 'https://shop.example.com/p/4'],
      lastAddToCart: 'https://shop.example.com/p/2',
    });
    const exported = exportedBody(tenant.orgId, '+442079460958', 'updatecart', 'PHONE');
    const [matchedId, eventId] = await enqueue(srv.deps.db, hook, [
      { kind: 'matched', body: matched },
      { kind: 'event', body: exported },
    ]);
    const got = await r.waitFor(2);
    const byMedium = new Map(got.map((req) => [JSON.parse(req.body).medium as string, req]));
    const validators = { matched: schemaValidator('ContactMatchedNotification'), event: schemaValidator('EventExportedNotification') };

    for (const [medium, sent, id] of [
      ['matched', matched, matchedId!],
      ['event', exported, eventId!],
    ] as const) {
      const req = byMedium.get(medium)!;
      const body = JSON.parse(req.body);
      expect(body).to.deep.equal(sent);
      expect(validators[medium](body), JSON.stringify(validators[medium].errors)).to.equal(true);
      expect(req.method).to.equal('POST');
      expect(req.path).to.equal('/hook');
      expect(req.headers['content-type']).to.equal('application/json');
      expect(req.headers.authorization).to.equal('Bearer tok_live_9f3a1c');
      expect(req.headers['user-agent']).to.equal(`Trackway-Webhooks/${VERSION} (+http://trackway.test/docs/webhooks)`);
      const params = doc.components.parameters as Record<string, { schema: { pattern: string } }>;
      expect(req.headers['user-agent']).to.match(new RegExp(params.WebhookUserAgent!.schema.pattern));
      expect(req.headers['webhook-signature']).to.match(new RegExp(params.WebhookSignature!.schema.pattern));
      const ts = Number(req.headers['webhook-timestamp']);
      expect(Number.isInteger(ts)).to.equal(true);
      expect(Math.abs(ts - Date.now() / 1000)).to.be.below(300);

      const d = await settled(id, 'delivered');
      expect(req.headers['webhook-id']).to.equal(d.webhook_id);
      expect(d.payload).to.deep.equal(sent);
      expect(d.kind).to.equal(medium);
      expect(d.delivered_at).to.be.a('string');
      expect(d.next_attempt_at).to.equal(null);
      expect(d.attempts).to.have.length(1);
      expect(d.attempts[0]).to.include({ status_code: 200, error: null, response_excerpt: '{"ok":true}' });

      // the standardwebhooks package accepts it, and rejects a tampered body
      const wh = new Webhook(hook.signingSecret);
      expect(wh.verify(req.body, req.headers as Record<string, string>)).to.deep.equal(sent);
      expect(() => wh.verify(req.body.replace('"org_id"', '"org_id" '), req.headers as Record<string, string>)).to.throw();
      // and the manual recipe of /docs/webhooks gives the same signature
      const key = Buffer.from(hook.signingSecret.slice('whsec_'.length), 'base64');
      const mac = createHmac('sha256', key)
        .update(`${String(req.headers['webhook-id'])}.${ts}.${req.body}`)
        .digest('base64');
      expect(req.headers['webhook-signature']).to.equal(`v1,${mac}`);
    }
    expect(byMedium.get('matched')!.headers['webhook-id']).to.not.equal(byMedium.get('event')!.headers['webhook-id']);
  });

  it('sends no Authorization header when the integration has no authToken', async () => {
    const r = await receiver();
    const hook = await integration(r, { authToken: null });
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const [req] = await r.waitFor(1);
    expect(req!.headers).to.not.have.property('authorization');
    await settled(id!, 'delivered');
  });

  it('retries a 500 and then succeeds, with the same webhook-id', async () => {
    const r = await receiver((_req, i) => (i === 0 ? { status: 500, body: 'boom' } : { status: 200 }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const d = await settled(id!, 'delivered');
    expect(r.requests).to.have.length(2);
    expect(r.requests[1]!.headers['webhook-id']).to.equal(r.requests[0]!.headers['webhook-id']).and.equal(d.webhook_id);
    const wh = new Webhook(hook.signingSecret);
    for (const req of r.requests) wh.verify(req.body, req.headers as Record<string, string>);
    expect(d.attempts_count).to.equal(2);
    expect(d.attempts.map((a) => a.status_code)).to.deep.equal([500, 200]);
    expect(d.attempts[0]!.response_excerpt).to.equal('boom');
    expect(d.last_error).to.equal('HTTP 500');
    // the failed attempt is a row of delivery_attempts; the one that delivered is kept on the delivery's row
    // (one write less per delivery), and the API lists both, in the order they were made
    const rows = await srv.deps.db
      .selectFrom('delivery_attempts')
      .select(['n', 'status_code'])
      .where('org_id', '=', tenant.orgId)
      .where('delivery_id', '=', id!)
      .execute();
    expect(rows).to.deep.equal([{ n: 1, status_code: 500 }]);
    const [failedAt, deliveredAt] = d.attempts.map((a) => Date.parse(a.attempted_at));
    expect(d.attempts[1]).to.include({ status_code: 200, error: null });
    expect(d.attempts[1]!.duration_ms).to.be.a('number').and.at.least(0);
    expect(deliveredAt).to.be.greaterThan(failedAt!).and.at.most(Date.parse(d.delivered_at!));
  });

  it('counts a receiver slower than httpTimeout as a failed attempt and retries it', async () => {
    const r = await receiver((_req, i) => (i === 0 ? { status: 200, delayMs: 2500 } : { status: 200 }));
    const hook = await integration(r, { httpTimeout: 1 });
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'event', body: exportedBody(tenant.orgId, 'a@b.co', 'view') }]);
    const d = await settled(id!, 'delivered');
    expect(d.attempts).to.have.length(2);
    expect(d.attempts[0]!.status_code).to.equal(null);
    expect(d.attempts[0]!.error).to.match(/timeout/i);
    expect(d.attempts[0]!.response_excerpt).to.equal(null);
    expect(d.attempts[1]!.status_code).to.equal(200);
    expect(d.last_error).to.match(/timeout/i);
  });

  it('fails a 400 at once, without retrying', async () => {
    const r = await receiver(() => ({ status: 400, body: '{"error":"bad request"}' }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const d = await settled(id!, 'failed');
    expect(d.attempts_count).to.equal(1);
    expect(d.attempts[0]).to.include({ status_code: 400, response_excerpt: '{"error":"bad request"}', error: null });
    expect(d.last_error).to.equal('HTTP 400');
    expect(d.next_attempt_at).to.equal(null);
    expect(r.requests).to.have.length(1);
  });

  it('does not follow redirects: a 3xx fails at once', async () => {
    const target = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { Location: target.url } }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const d = await settled(id!, 'failed', 1);
    expect(d.attempts_count).to.equal(1);
    expect(d.attempts[0]!.status_code).to.equal(302);
    expect(target.requests).to.have.length(0);
  });

  it('retries network errors on the schedule, then dead-letters', async () => {
    // nothing listens on port 1
    const hook = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: 'http://127.0.0.1:1/hook' });
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const d = await settled(id!, 'failed', 3);
    expect(d.attempts_count).to.equal(3);
    for (const a of d.attempts) {
      expect(a.status_code).to.equal(null);
      expect(a.error).to.match(/ECONNREFUSED/);
    }
  });

  it('honours Retry-After on a 429 (not sooner, even with a shorter schedule)', async () => {
    const r = await receiver((_req, i) => (i === 0 ? { status: 429, headers: { 'Retry-After': '1' } } : { status: 204 }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const d = await settled(id!, 'delivered');
    expect(d.attempts.map((a) => a.status_code)).to.deep.equal([429, 204]);
    // the schedule's first step is 100 ms; Retry-After asked for a second
    expect(r.requests[1]!.at - r.requests[0]!.at).to.be.at.least(950);
    expect(Date.parse(d.attempts[1]!.attempted_at) - Date.parse(d.attempts[0]!.attempted_at)).to.be.at.least(950);
  });

  it('dead-letters after the schedule, then a manual retry through the API sends it again with the same webhook-id', async () => {
    const r = await receiver(() => ({ status: 503, body: 'unavailable' }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const failed = await settled(id!, 'failed');
    expect(failed.attempts_count).to.equal(3); // the first attempt and the two steps of 100ms,200ms
    expect(failed.last_error).to.equal('HTTP 503');
    expect(failed.next_attempt_at).to.equal(null);
    expect(r.requests).to.have.length(3);

    r.respond(() => ({ status: 200 }));
    const retried = await srv.api.post<BodyOf<'retryDelivery'>>(`/v1/rest/${tenant.platform}/deliveries/${id}/retry`, undefined, {
      token: tenant.token,
    });
    expect(retried.status).to.equal(200);
    expect(retried.body).to.include({ id, status: 'pending', webhook_id: failed.webhook_id, attempts_count: 3 });
    expect(retried.body.next_attempt_at).to.be.a('string');
    const delivered = await settled(id!, 'delivered');
    expect(delivered.attempts_count).to.equal(4);
    expect(delivered.attempts.map((a) => a.status_code)).to.deep.equal([503, 503, 503, 200]);
    expect(r.requests).to.have.length(4);
    expect(new Set(r.requests.map((q) => q.headers['webhook-id']))).to.deep.equal(new Set([failed.webhook_id]));

    const again = await srv.api.post<PlatformError>(`/v1/rest/${tenant.platform}/deliveries/${id}/retry`, undefined, { token: tenant.token });
    expect(again.status).to.equal(409);
    expect(again.body.code).to.equal(4090);
  });

  it('a manual retry restarts the schedule: a failing endpoint gets the full schedule again', async () => {
    const r = await receiver(() => ({ status: 502 }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'event', body: exportedBody(tenant.orgId, 'a@b.co', 'buy') }]);
    await settled(id!, 'failed');
    await srv.api.post(`/v1/rest/${tenant.platform}/deliveries/${id}/retry`, undefined, { token: tenant.token });
    const d = await eventually(async () => {
      const x = await delivery(id!);
      return x.status === 'failed' && x.attempts_count === 6 && x.attempts.length === 6 ? x : undefined;
    });
    expect(d.attempts.map((a) => a.status_code)).to.deep.equal([502, 502, 502, 502, 502, 502]);
  });

  it('caps requests in flight per endpoint, so a slow receiver does not hold up the others', async () => {
    const slow = await receiver(() => ({ status: 200, hold: true }));
    const fast = await receiver();
    const slowHook = await integration(slow, { httpTimeout: 20 });
    const fastHook = await integration(fast);
    const many = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({ kind: 'matched' as const, body: matchedBody(tenant.orgId, `${tag}${i}@example.com`) }));
    // the configured cap (WEBHOOK_CONCURRENCY), not a literal
    const cap = srv.deps.config.webhookShare.perIntegration;
    const total = cap + 22;
    const slowIds = await enqueue(srv.deps.db, slowHook, many(total, 'slow'));
    await slow.waitFor(cap);
    const fastIds = await enqueue(srv.deps.db, fastHook, many(5, 'fast'));
    for (const id of fastIds) await settled(id, 'delivered', 1);
    expect(fast.requests).to.have.length(5);
    // `cap` requests wait on the slow endpoint, and not one more was sent to it
    expect(slow.requests).to.have.length(cap);
    expect(slow.holding).to.equal(cap);

    slow.respond(() => ({ status: 200 }));
    slow.releaseHeld();
    for (const id of slowIds) expect((await settled(id, 'delivered', 1)).attempts_count).to.equal(1);
    expect(slow.requests).to.have.length(total);
    expect(new Set(slow.requests.map((q) => q.headers['webhook-id'])).size).to.equal(total);
  });

  it('deactivating cancels pending deliveries; re-activating sends only what happens afterwards', async () => {
    // the first answer parks the delivery for 30 s
    const r = await receiver((_req, i) => (i === 0 ? { status: 503, headers: { 'Retry-After': '30' } } : { status: 200 }));
    const hook = await integration(r);
    const [parked] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const waiting = await settled(parked!, 'pending', 1);
    expect(Date.parse(waiting.next_attempt_at!) - Date.now()).to.be.above(20_000);

    expect(await deactivate(srv.deps.db, hook)).to.equal(1);
    const cancelled = await delivery(parked!);
    expect(cancelled).to.include({ status: 'cancelled', next_attempt_at: null });

    // a delivery enqueued by an ingest that had not yet seen the change is cancelled when claimed
    const [late] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId, 'late@example.com') }]);
    const lateRow = await settled(late!, 'cancelled');
    expect(lateRow.attempts_count).to.equal(0);
    expect(lateRow.last_error).to.match(/deactivated or deleted/);

    await reactivate(srv.deps.db, hook);
    const [after] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId, 'after@example.com') }]);
    const delivered = await settled(after!, 'delivered');
    expect(r.requests).to.have.length(2);
    expect(r.requests[1]!.headers['webhook-id']).to.equal(delivered.webhook_id);
    expect((await delivery(parked!)).status).to.equal('cancelled');
    expect((await delivery(late!)).status).to.equal('cancelled');
  });

  it('works with integrations made through the platform API; its PUT active=false and DELETE cancel pending deliveries', async () => {
    const r = await receiver(() => ({ status: 503, headers: { 'Retry-After': '30' } }));
    const base = `/v1/rest/${tenant.platform}/integration`;
    const data = { endpoint: r.url, httpTimeout: '5', do_events: true, do_contacts: true };
    const created = await srv.api.post<BodyOf<'createIntegration'>>(
      base,
      { org_id: tenant.orgId, active: true, type: 'WEBHOOK', data: { ...data, authToken: 'tok_api_5678' } },
      { token: tenant.token },
    );
    expect(created.status).to.equal(201);
    const hook: TestIntegration = { id: created.body.integration.id, orgId: tenant.orgId, signingSecret: created.body.integration.signing_secret };

    const [first] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const [req] = await r.waitFor(1);
    expect(new Webhook(hook.signingSecret).verify(req!.body, req!.headers as Record<string, string>)).to.deep.equal(matchedBody(tenant.orgId));
    expect(req!.headers.authorization).to.equal('Bearer tok_api_5678');
    await settled(first!, 'pending', 1);
    const paused = await srv.api.put(base, { id: hook.id, org_id: tenant.orgId, active: false, type: 'WEBHOOK', data }, { token: tenant.token });
    expect(paused.status).to.equal(200);
    expect((await delivery(first!)).status).to.equal('cancelled');

    const resumed = await srv.api.put(base, { id: hook.id, org_id: tenant.orgId, active: true, type: 'WEBHOOK', data }, { token: tenant.token });
    expect(resumed.status).to.equal(200);
    const [second] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId, 'second@example.com') }]);
    await settled(second!, 'pending', 1);
    const deleted = await srv.api.delete(`${base}/${hook.id}`, { token: tenant.token });
    expect(deleted.status).to.equal(204);
    expect((await delivery(second!)).status).to.equal('cancelled');
    expect((await delivery(first!)).status).to.equal('cancelled');
    expect(r.requests).to.have.length(2);
  });

  it('deleting an integration cancels its pending deliveries, which can then not be retried', async () => {
    const r = await receiver(() => ({ status: 503, headers: { 'Retry-After': '30' } }));
    const hook = await integration(r);
    const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    await settled(id!, 'pending', 1);
    expect(await deactivate(srv.deps.db, hook, { delete: true })).to.equal(1);
    const d = await delivery(id!); // history stays readable
    expect(d.status).to.equal('cancelled');
    const retry = await srv.api.post<PlatformError>(`/v1/rest/${tenant.platform}/deliveries/${id}/retry`, undefined, { token: tenant.token });
    expect(retry.status).to.equal(409);
    expect(retry.body.code).to.equal(4090);
  });
});
