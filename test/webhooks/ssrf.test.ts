// The private-address guard: refused ranges, and refusals recorded on the
// delivery (not retried) when WEBHOOK_ALLOW_PRIVATE_NETWORKS is off.
import { expect } from 'chai';
import { refusedRange } from '../../src/webhooks/ssrf.client.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Tenant, createIntegration, createTenant, enqueue, eventually, matchedBody } from '../support/webhook-fixtures.ts';
import type { BodyOf } from '../support/client.ts';

describe('webhook private-address guard', function () {
  this.timeout(30_000);

  it('classifies addresses, unwrapping IPv4 inside IPv6', () => {
    const cases: [string, string | undefined][] = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.5.4', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['169.254.10.20', 'link-local'],
      ['fe80::1', 'link-local'],
      ['100.64.0.1', 'carrier-grade NAT'],
      ['100.127.255.254', 'carrier-grade NAT'],
      ['169.254.169.254', 'cloud metadata'],
      ['fd00:ec2::254', 'cloud metadata'],
      ['0.0.0.0', 'unspecified'],
      ['0.1.2.3', 'unspecified'],
      ['::', 'unspecified'],
      ['224.0.0.251', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:a9fe:a9fe', 'cloud metadata'],
      ['[::ffff:10.1.2.3]', 'private'],
      ['64:ff9b::a00:1', 'private'],
      ['2002:c0a8:101::1', 'private'],
      ['8.8.8.8', undefined],
      ['172.32.0.1', undefined],
      ['100.128.0.1', undefined],
      ['93.184.216.34', undefined],
      ['2606:4700:4700::1111', undefined],
      ['::ffff:8.8.8.8', undefined],
    ];
    for (const [address, range] of cases) expect(refusedRange(address), address).to.equal(range);
  });

  describe('with private networks refused (the default)', () => {
    let srv: TestServer;
    let tenant: Tenant;
    let receiver: TestReceiver;

    before(async () => {
      srv = await startTestServer({ WEBHOOK_RETRY_SCHEDULE: '100ms,200ms' }, { dispatcher: true });
      expect(srv.config.webhookAllowPrivateNetworks).to.equal(false);
      tenant = await createTenant(srv.deps.db, srv.deps.tokens);
      receiver = await TestReceiver.start();
    });
    after(async () => {
      await receiver.close();
      await srv.stop();
    });

    for (const [label, host, shown] of [
      ['an IP literal', '127.0.0.1', /refused: 127\.0\.0\.1, a loopback address/],
      ['a name resolving to loopback', 'localhost', /refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
      ['an IPv4-mapped IPv6 literal', '[::ffff:127.0.0.1]', /refused: .*a loopback address/],
    ] as const) {
      it(`refuses ${label}, records why, and does not retry`, async () => {
        const hook = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, {
          endpoint: `http://${host}:${receiver.port}/hook`,
        });
        const [id] = await enqueue(srv.deps.db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
        const d = await eventually(async () => {
          const r = await srv.api.get<BodyOf<'getDelivery'>>(`/v1/rest/${tenant.platform}/deliveries/${id}`, { token: tenant.token });
          return r.body.status === 'failed' && r.body.attempts.length === 1 ? r.body : undefined;
        });
        expect(d.attempts_count).to.equal(1);
        expect(d.attempts[0]!.status_code).to.equal(null);
        expect(d.attempts[0]!.error).to.match(shown);
        expect(d.attempts[0]!.error).to.include('WEBHOOK_ALLOW_PRIVATE_NETWORKS');
        expect(d.last_error).to.equal(d.attempts[0]!.error);
        expect(receiver.requests).to.have.length(0);
      });
    }

    it('applies the guard to test deliveries too', async () => {
      const hook = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: receiver.url });
      const r = await srv.api.post<BodyOf<'testIntegration'>>(`/v1/rest/${tenant.platform}/integration/${hook.id}/test`, undefined, {
        token: tenant.token,
      });
      expect(r.status).to.equal(200);
      expect(r.body).to.include({ delivered: false, status_code: null, response_excerpt: null });
      expect(r.body.error).to.match(/refused: 127\.0\.0\.1, a loopback address/);
      expect(receiver.requests).to.have.length(0);
    });
  });
});
