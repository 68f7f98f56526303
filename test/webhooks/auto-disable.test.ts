// Auto-disable (docs/design.md "Trust"): an endpoint failing for
// WEBHOOK_DISABLE_AFTER is disabled with the reason shown, its pending
// deliveries cancelled; activating it again clears it.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import type { BodyOf } from '../support/client.ts';
import { type Tenant, createTenant, enqueue, eventually, many, SCHEDULE, sleep } from '../support/webhook-fixtures.ts';

describe('circuit breaker', function () {
  this.timeout(60_000);
  describe('auto-disable (WEBHOOK_DISABLE_AFTER=2s)', () => {
    let srv: TestServer;
    let tenant: Tenant;
    let r: TestReceiver;

    before(async () => {
      srv = await startTestServer(
        { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: SCHEDULE, WEBHOOK_DISABLE_AFTER: '2s' },
        { dispatcher: true, dispatcherOptions: { breaker: { threshold: 5, cooldownMs: 200, maxCooldownMs: 400 } } },
      );
      tenant = await createTenant(srv.deps.db, srv.deps.tokens);
      r = await TestReceiver.start(() => ({ status: 500, body: 'broken' }));
    });
    after(async () => {
      await r.close();
      await srv.stop();
    });

    it('disables an endpoint that failed every attempt for 2 s, with the reason in the API; its pending deliveries are cancelled; activating it clears it', async () => {
      const base = `/v1/rest/${tenant.platform}/integration`;
      const created = await srv.api.post<BodyOf<'createIntegration'>>(
        base,
        { org_id: tenant.orgId, active: true, type: 'WEBHOOK', data: { endpoint: r.url, do_events: true, do_contacts: true } },
        { token: tenant.token },
      );
      const hook = {
        id: created.body.integration.id,
        orgId: tenant.orgId,
        signingSecret: created.body.integration.signing_secret,
      };
      const ids = await enqueue(srv.deps.db, hook, many(tenant.orgId, 12, 'off'));

      const disabled = await eventually(
        async () => {
          const i = (await srv.api.get<BodyOf<'getIntegration'>>(`${base}/${hook.id}`, { token: tenant.token })).body;
          return i.health.state === 'disabled' ? i : undefined;
        },
        15_000,
        'the endpoint to be disabled',
      );
      expect(disabled.active).to.equal(false);
      expect(disabled.health.disabled_reason).to.match(
        /^Disabled automatically: no delivery succeeded for 2 seconds \(failing since .*\d+ attempts in a row\); last error: HTTP 500\./,
      );
      expect(Date.parse(disabled.health.disabled_at!) - Date.parse(disabled.health.failing_since!)).to.be.at.least(2_000);
      expect(disabled.health).to.include({ paused_until: null, last_error: 'HTTP 500' });
      console.log(
        `      auto-disable figures: disabled ${Date.parse(disabled.health.disabled_at!) - Date.parse(disabled.health.failing_since!)} ms after its first failure (WEBHOOK_DISABLE_AFTER=2s), after ${disabled.health.consecutive_failures} failed attempts`,
      );

      // as a deactivation does: nothing pending any more, nothing lost (cancelled, retryable)
      const list = await srv.api.get<BodyOf<'listDeliveries'>>(`/v1/rest/${tenant.platform}/organisations/${tenant.orgId}/deliveries?limit=50`, {
        token: tenant.token,
      });
      expect(list.body.items).to.have.length(12);
      for (const d of list.body.items) expect(d.status).to.equal('cancelled');
      expect(list.body.items.map((d) => d.last_error)).to.include('integration deactivated or deleted');
      const sent = r.requests.length;
      await sleep(600);
      expect(r.requests.length, 'attempts after the disable').to.equal(sent);
      const metrics = (await srv.api.get('/metrics', { unchecked: true })).text;
      expect(metrics).to.match(/trackway_webhook_endpoints_disabled_total 1/);

      // the merchant fixes the endpoint and activates the integration again: the state is cleared
      r.respond(() => ({ status: 200 }));
      const on = await srv.api.request<BodyOf<'patchIntegration'>>('PATCH', `${base}/${hook.id}`, { body: { active: true }, token: tenant.token });
      expect(on.status).to.equal(200);
      expect(on.body.integration.active).to.equal(true);
      expect(on.body.integration.health).to.deep.equal({
        state: 'healthy',
        consecutive_failures: 0,
        failing_since: null,
        last_error: null,
        paused_until: null,
        disabled_at: null,
        disabled_reason: null,
      });
      // and what was cancelled can be sent again
      for (const id of ids) {
        const retried = await srv.api.post(`/v1/rest/${tenant.platform}/deliveries/${id}/retry`, undefined, { token: tenant.token });
        expect(retried.status).to.equal(200);
      }
      await eventually(
        async () => {
          const l = await srv.api.get<BodyOf<'listDeliveries'>>(
            `/v1/rest/${tenant.platform}/organisations/${tenant.orgId}/deliveries?status=delivered&limit=50`,
            {
              token: tenant.token,
            },
          );
          return l.body.items.length === 12 ? true : undefined;
        },
        10_000,
        'the retried deliveries',
      );
    });
  });
});
