// The circuit breaker (docs/design.md "Trust"): an endpoint failing N times
// in a row is paused (the API says so), gets no attempt while paused, keeps
// every delivery pending with its attempt count, gets one probe after the
// cool-down (and a longer pause when it fails), and recovers with everything
// delivered. Shared by two dispatchers: circuit-breaker-shared.test.ts;
// auto-disable (WEBHOOK_DISABLE_AFTER): auto-disable.test.ts.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { DEFAULT_BREAKER, type EndpointOutcome, healthView, summarise } from '../../src/webhooks/circuit-breaker.rules.ts';
import { completeAttempts } from '../../src/webhooks/outcomes.repository.ts';
import { longDuration } from '../../src/webhooks/auto-disable.service.ts';
import { freshDatabase, startTestServer, type TestDatabase, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Tenant, createTenant, enqueue, eventually, many, SCHEDULE, sleep } from '../support/webhook-fixtures.ts';
import { testOrgId } from '../support/org-id.ts';
import type { BodyOf } from '../support/client.ts';

describe('circuit breaker', function () {
  this.timeout(60_000);

  describe('pure parts', () => {
    it('defaults to 5 failures in a row and a 5 s pause doubling up to 10 min', () => {
      expect(DEFAULT_BREAKER).to.deep.equal({ threshold: 5, cooldownMs: 5_000, maxCooldownMs: 600_000 });
    });

    it('sums a batch up per endpoint in the order the endpoint answered: failures after the last success count', () => {
      const at = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms);
      const a = (integrationId: number, ok: boolean, ms: number, extra: object = {}) => ({
        orgId: testOrgId(1),
        integrationId,
        ok,
        attemptedAt: at(ms),
        durationMs: 10,
        error: ok ? null : `HTTP 50${ms % 10}`,
        probe: false,
        ...extra,
      });
      const out = summarise([a(1, false, 0), a(1, true, 20), a(1, false, 40), a(1, false, 31), a(2, false, 5, { probe: true }), a(3, true, 1)]);
      expect(out).to.deep.equal([
        { orgId: 1, integrationId: 1, ok: true, fails: 2, firstFailAt: at(31), lastFailAt: at(40), lastError: 'HTTP 500', probeFailed: false },
        { orgId: 1, integrationId: 2, ok: false, fails: 1, firstFailAt: at(5), lastFailAt: at(5), lastError: 'HTTP 505', probeFailed: true },
        { orgId: 1, integrationId: 3, ok: true, fails: 0, firstFailAt: null, lastFailAt: null, lastError: null, probeFailed: false },
      ]);
    });

    it('shows a missing row as healthy, and each state with what it needs', () => {
      const row = {
        org_id: testOrgId(1),
        integration_id: 2,
        consecutive_failures: 3,
        failing_since: new Date('2024-05-15T16:02:48.551Z'),
        last_error: 'HTTP 503',
        opened_count: 0,
        paused_until: null,
        disabled_at: null,
        disabled_reason: null,
      };
      expect(healthView(undefined).state).to.equal('healthy');
      expect(healthView(row)).to.include({
        state: 'failing',
        consecutive_failures: 3,
        failing_since: '2024-05-15T16:02:48.551Z',
        paused_until: null,
      });
      const until = new Date('2024-05-15T16:05:00.000Z');
      expect(healthView({ ...row, opened_count: 2, paused_until: until })).to.include({ state: 'paused', paused_until: until.toISOString() });
      expect(healthView({ ...row, disabled_at: until, disabled_reason: 'why' })).to.include({ state: 'disabled', disabled_reason: 'why' });
      expect(longDuration(5 * 86_400_000)).to.equal('5 days');
      expect(longDuration(2_000)).to.equal('2 seconds');
    });

    it('reads WEBHOOK_DISABLE_AFTER: 5 days by default, a duration, or off', () => {
      expect(loadConfig({}).webhookDisableAfterMs).to.equal(5 * 86_400_000);
      expect(loadConfig({ WEBHOOK_DISABLE_AFTER: '36h' }).webhookDisableAfterMs).to.equal(36 * 3_600_000);
      expect(loadConfig({ WEBHOOK_DISABLE_AFTER: 'off' }).webhookDisableAfterMs).to.equal(undefined);
      expect(() => loadConfig({ WEBHOOK_DISABLE_AFTER: 'soon' })).to.throw(/WEBHOOK_DISABLE_AFTER/);
      expect(() => loadConfig({ WEBHOOK_DISABLE_AFTER: '10ms' })).to.throw(/at least 1s/);
    });
  });

  describe('the outcome write (SQL)', () => {
    let database: TestDatabase;
    const breaker = { threshold: 5, cooldownMs: 1_000, maxCooldownMs: 8_000, disableAfterMs: 60_000 };
    before(async () => {
      database = await freshDatabase();
    });
    after(() => database.drop());

    // a batch whose delivery does not exist: only the endpoint summary matters here
    const write = (endpoint: Omit<EndpointOutcome, 'orgId' | 'integrationId'>, integrationId: number) =>
      completeAttempts(
        database.handle.db,
        [
          {
            orgId: testOrgId(1),
            id: 987_654_321,
            n: 1,
            outcome: 'retry',
            delayMs: 0,
            lastError: 'x',
            attemptedAt: new Date(),
            statusCode: null,
            durationMs: 1,
            error: 'x',
            responseExcerpt: null,
            deliveredAt: null,
          },
        ],
        [{ orgId: testOrgId(1), integrationId, ...endpoint }],
        breaker,
      );
    const fail = (n: number, extra: Partial<EndpointOutcome> = {}) => ({
      ok: false,
      fails: n,
      firstFailAt: new Date(),
      lastFailAt: new Date(),
      lastError: 'HTTP 503',
      probeFailed: false,
      ...extra,
    });
    const row = (integrationId: number) =>
      database.handle.db
        .selectFrom('webhook_endpoint_health')
        .selectAll()
        .where('org_id', '=', testOrgId(1))
        .where('integration_id', '=', integrationId)
        .executeTakeFirst();

    it('counts failures, opens at the threshold, doubles the pause on each failed probe up to the cap, and deletes the row on a success', async () => {
      const first = await write(fail(4), 11);
      expect(first.health).to.have.length(1);
      expect(first.health[0]).to.include({ consecutive_failures: 4, opened_count: 0, opened_now: false, disable_due: false });
      const opened = await write(fail(1), 11);
      expect(opened.health[0]).to.include({ consecutive_failures: 5, opened_count: 1, opened_now: true });
      const pause = (h: { paused_until: Date | null }) => h.paused_until!.getTime() - Date.now();
      expect(pause(opened.health[0]!)).to.be.within(500, 1_000);
      // failures of attempts still in flight count, but do not move the pause
      const straggler = await write(fail(2), 11);
      expect(straggler.health[0]).to.include({ consecutive_failures: 7, opened_count: 1, opened_now: false });
      expect(straggler.health[0]!.paused_until!.getTime()).to.equal(opened.health[0]!.paused_until!.getTime());
      // failed probes: 2 s, 4 s, 8 s, 8 s (the cap)
      for (const expected of [2_000, 4_000, 8_000, 8_000]) {
        const probe = await write(fail(1, { probeFailed: true }), 11);
        expect(probe.health[0]!.opened_now).to.equal(true);
        expect(pause(probe.health[0]!)).to.be.within(expected - 500, expected);
      }
      expect((await row(11))!.opened_count).to.equal(5);
      // a success closes it
      const ok = await write({ ok: true, fails: 0, firstFailAt: null, lastFailAt: null, lastError: null, probeFailed: false }, 11);
      expect(ok.health).to.deep.equal([]);
      expect(ok.resumed).to.deep.equal([{ org_id: 1, integration_id: 11 }]);
      expect(await row(11)).to.equal(undefined);
    });

    it('restarts the count from the failures after a success in the same batch, and flags an endpoint failing for longer than the limit', async () => {
      await write(fail(3), 12);
      const mixed = await write(
        { ok: true, fails: 2, firstFailAt: new Date(), lastFailAt: new Date(), lastError: 'HTTP 502', probeFailed: false },
        12,
      );
      expect(mixed.health[0]).to.include({ consecutive_failures: 2, opened_count: 0, last_error: 'HTTP 502' });
      const long = await write(fail(1, { firstFailAt: new Date(Date.now() - 120_000) }), 13);
      expect(long.health[0]).to.include({ disable_due: true });
    });
  });

  describe('pausing and probing (threshold 5, pauses of 1 s then 2 s)', () => {
    let srv: TestServer;
    let tenant: Tenant;
    const receivers: TestReceiver[] = [];

    before(async () => {
      srv = await startTestServer(
        { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: SCHEDULE },
        { dispatcher: true, dispatcherOptions: { breaker: { threshold: 5, cooldownMs: 1_000, maxCooldownMs: 4_000 } } },
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

    async function webhook(endpoint: string) {
      const r = await srv.api.post<BodyOf<'createIntegration'>>(
        `/v1/rest/${tenant.platform}/integration`,
        { org_id: tenant.orgId, active: true, type: 'WEBHOOK', data: { endpoint, httpTimeout: '5', do_events: true, do_contacts: true } },
        { token: tenant.token },
      );
      expect(r.status, r.text).to.equal(201);
      return { id: r.body.integration.id, orgId: tenant.orgId, signingSecret: r.body.integration.signing_secret };
    }

    async function read(id: number) {
      const r = await srv.api.get<BodyOf<'getIntegration'>>(`/v1/rest/${tenant.platform}/integration/${id}`, { token: tenant.token });
      expect(r.status).to.equal(200);
      return r.body;
    }

    function deliveries(integrationId: number) {
      return srv.deps.db
        .selectFrom('deliveries')
        .select(['id', 'status', 'attempts_count'])
        .where('org_id', '=', tenant.orgId)
        .where('integration_id', '=', integrationId)
        .orderBy('id')
        .execute();
    }

    it('pauses a failing endpoint after 5 failures, sends nothing while paused, probes once, pauses longer, and recovers with every delivery made', async () => {
      const r = await receiver(() => ({ status: 503, body: 'down' }));
      const hook = await webhook(r.url);
      await enqueue(srv.deps.db, hook, many(tenant.orgId, 20, 'cb'));

      // paused: the API says so, with why and until when
      const paused = await eventually(
        async () => {
          const i = await read(hook.id);
          return i.health.state === 'paused' ? i : undefined;
        },
        10_000,
        'the endpoint to be paused',
      );
      expect(paused.active).to.equal(true);
      expect(paused.health.consecutive_failures).to.be.at.least(5);
      expect(paused.health.last_error).to.equal('HTTP 503');
      expect(Date.parse(paused.health.failing_since!)).to.be.at.most(Date.now());
      expect(Date.parse(paused.health.paused_until!)).to.be.above(Date.now());
      expect(paused.health).to.include({ disabled_at: null, disabled_reason: null });

      // attempts started before the breaker opened may still be on their way (a loaded machine): once every
      // attempt counted on a delivery has reached the receiver (what the dispatcher still held is given back,
      // its count restored), nothing more may start while paused
      const counted = async () => (await deliveries(hook.id)).reduce((n, d) => n + d.attempts_count, 0);
      await eventually(async () => ((await counted()) === r.requests.length ? true : undefined), 5_000, 'attempts in flight to arrive');
      // while paused: no attempt, every delivery pending with the attempts it had
      const sentBefore = r.requests.length;
      const before = await deliveries(hook.id);
      await sleep(Math.max(0, Date.parse(paused.health.paused_until!) - Date.now() - 150));
      expect(r.requests.length, 'attempts while paused').to.equal(sentBefore);
      const during = await deliveries(hook.id);
      expect(during).to.deep.equal(before);
      expect(during.every((d) => d.status === 'pending')).to.equal(true);
      expect(during.filter((d) => d.attempts_count > 0)).to.have.length(sentBefore);

      // after the pause: exactly one probe; it fails, and the pause is longer
      await r.waitFor(sentBefore + 1, 5_000);
      // the probe's failure recorded, and the pause it chose, read from the endpoint's row: the pause is
      // paused_until − updated_at, both written by that outcome (the API's paused_until is the next
      // probe's lease once that probe is out, and "now" drifts on a loaded machine)
      const again = await eventually(
        async () => {
          const h = await srv.deps.db
            .selectFrom('webhook_endpoint_health')
            .select(['consecutive_failures', 'opened_count', 'paused_until', 'updated_at'])
            .where('org_id', '=', tenant.orgId)
            .where('integration_id', '=', hook.id)
            .executeTakeFirst();
          const probed = h !== undefined && h.consecutive_failures > paused.health.consecutive_failures;
          // a pause, not the lease of a probe that is out (a lease is httpTimeout + margin, far above 4 s)
          const pause = h?.paused_until ? h.paused_until.getTime() - h.updated_at.getTime() : Infinity;
          return probed && h.opened_count >= 2 && pause <= 4_000 ? h : undefined;
        },
        5_000,
        'a longer pause after the failed probe',
      );
      await sleep(500);
      expect(r.requests.length, 'one probe').to.equal(sentBefore + 1);
      const pauseMs = again.paused_until!.getTime() - again.updated_at.getTime();
      expect(pauseMs).to.be.above(1_000).and.at.most(2_000);
      expect((await read(hook.id)).health.state).to.equal('paused');

      // the endpoint recovers: the next probe succeeds and everything that waited is delivered, each once
      r.respond(() => ({ status: 200 }));
      await eventually(async () => ((await deliveries(hook.id)).every((d) => d.status === 'delivered') ? true : undefined), 15_000, 'every delivery');
      const after = await deliveries(hook.id);
      // each delivery made exactly one attempt more than it had when the pause began (the probe's included)
      const had = new Map(during.map((d) => [d.id, d.attempts_count]));
      const extra = after.map((d) => d.attempts_count - had.get(d.id)!);
      expect(extra.filter((n) => n === 1).length + extra.filter((n) => n === 2).length).to.equal(20);
      expect(extra.filter((n) => n === 2)).to.have.length(1); // the probe that failed, then its retry
      expect((await read(hook.id)).health).to.deep.equal({
        state: 'healthy',
        consecutive_failures: 0,
        failing_since: null,
        last_error: null,
        paused_until: null,
        disabled_at: null,
        disabled_reason: null,
      });
      const delivered = r.requests.filter((q) => q.headers['webhook-id']).map((q) => q.headers['webhook-id']);
      expect(new Set(delivered).size).to.equal(20);

      const metrics = (await srv.api.get('/metrics', { unchecked: true })).text;
      expect(metrics).to.match(/trackway_webhook_breaker_opened_total [2-9]/);
      expect(metrics).to.match(/trackway_webhook_endpoints_paused 0/);
    });

    it('counts timeouts, and shows a paused endpoint in the paused gauge and the integration list', async () => {
      const r = await receiver(() => ({ status: 200, delayMs: 3_000 }));
      const res = await srv.api.post<BodyOf<'createIntegration'>>(
        `/v1/rest/${tenant.platform}/integration`,
        { org_id: tenant.orgId, active: true, type: 'WEBHOOK', data: { endpoint: r.url, httpTimeout: '1', do_events: true, do_contacts: true } },
        { token: tenant.token },
      );
      const hook = { id: res.body.integration.id, orgId: tenant.orgId, signingSecret: '' };
      await enqueue(srv.deps.db, hook, many(tenant.orgId, 6, 'slow'));
      const listed = await eventually(
        async () => {
          const l = await srv.api.get<BodyOf<'listIntegrations'>>(`/v1/rest/${tenant.platform}/integration?org_id=${tenant.orgId}`, {
            token: tenant.token,
          });
          const i = l.body.items.find((x) => x.id === hook.id);
          return i!.health.state === 'paused' ? i : undefined;
        },
        10_000,
        'the slow endpoint to be paused',
      );
      expect(listed.health.last_error).to.match(/timeout/i);
      const metrics = (await srv.api.get('/metrics', { unchecked: true })).text;
      expect(metrics).to.match(/trackway_webhook_endpoints_paused [1-9]/);
      // a new endpoint clears the pause, and what waited goes there at once
      const ok = await receiver(() => ({ status: 204 }));
      const patched = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', `/v1/rest/${tenant.platform}/integration/${hook.id}`, {
        body: { data: { endpoint: ok.url } },
        token: tenant.token,
      });
      expect(patched.status).to.equal(200);
      expect(patched.body.integration.health.state).to.equal('healthy');
      await ok.waitFor(6, 10_000);
    });

    it('clears a pause when the integration is deactivated and activated again', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const hook = await webhook(r.url);
      await enqueue(srv.deps.db, hook, many(tenant.orgId, 8, 'toggle'));
      await eventually(async () => ((await read(hook.id)).health.state === 'paused' ? true : undefined), 10_000, 'a pause');
      const path = `/v1/rest/${tenant.platform}/integration/${hook.id}`;
      const off = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', path, { body: { active: false }, token: tenant.token });
      expect(off.body.integration.health.state).to.equal('paused');
      const on = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', path, { body: { active: true }, token: tenant.token });
      expect(on.body.integration.health).to.include({ state: 'healthy', consecutive_failures: 0 });
    });
  });
});
