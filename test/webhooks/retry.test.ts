// The retry rules and the signature, without a network.
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.ts';
import { humanDuration } from '../../src/webhooks/webhooks-docs.page.ts';
import { decide, isRetryableStatus, jitter, parseRetryAfter, retryAfterCap } from '../../src/webhooks/retry.rules.ts';
import { deliveryHeaders, sign, signingKey } from '../../src/webhooks/signing.crypto.ts';

const SCHEDULE = [5_000, 300_000, 1_800_000];
const half = () => 0.5;
const seen = (statusCode: number | null, extra: { retryAfterMs?: number; permanent?: boolean } = {}) => ({
  statusCode,
  retryAfterMs: extra.retryAfterMs ?? null,
  permanent: extra.permanent ?? false,
});

describe('webhook retry rules', () => {
  it('delivers on any 2xx', () => {
    for (const s of [200, 201, 202, 204, 299]) expect(decide(seen(s), 1, SCHEDULE)).to.deep.equal({ kind: 'delivered' });
  });

  it('retries timeouts, network errors, 408, 409, 425, 429 and 5xx; fails anything else at once', () => {
    for (const s of [408, 409, 425, 429, 500, 502, 503, 504, 599]) expect(isRetryableStatus(s), String(s)).to.equal(true);
    for (const s of [100, 301, 302, 304, 400, 401, 403, 404, 410, 413, 422]) {
      expect(isRetryableStatus(s), String(s)).to.equal(false);
      expect(decide(seen(s), 1, SCHEDULE)).to.deep.equal({ kind: 'failed' });
    }
    expect(decide(seen(null), 1, SCHEDULE, half)).to.deep.equal({ kind: 'retry', delayMs: 5_000 });
    expect(decide(seen(503), 2, SCHEDULE, half)).to.deep.equal({ kind: 'retry', delayMs: 300_000 });
  });

  it('fails a refused address or unusable URL at once', () => {
    expect(decide(seen(null, { permanent: true }), 1, SCHEDULE)).to.deep.equal({ kind: 'failed' });
  });

  it('walks the schedule, then dead-letters', () => {
    expect(decide(seen(500), 3, SCHEDULE, half)).to.deep.equal({ kind: 'retry', delayMs: 1_800_000 });
    expect(decide(seen(500), 4, SCHEDULE, half)).to.deep.equal({ kind: 'failed' });
    expect(decide(seen(500), 1, [], half)).to.deep.equal({ kind: 'failed' });
  });

  it('jitters each step by ±10%', () => {
    expect(jitter(10_000, () => 0)).to.equal(9_000);
    expect(jitter(10_000, () => 0.999999)).to.equal(11_000);
    for (let i = 0; i < 200; i++) expect(jitter(5_000)).to.be.within(4_500, 5_500);
  });

  it('honours Retry-After: never sooner, capped by the longest step (at least a minute)', () => {
    expect(decide(seen(429, { retryAfterMs: 120_000 }), 1, SCHEDULE, half)).to.deep.equal({ kind: 'retry', delayMs: 120_000 });
    // shorter than the step: the step wins
    expect(decide(seen(429, { retryAfterMs: 1_000 }), 1, SCHEDULE, half)).to.deep.equal({ kind: 'retry', delayMs: 5_000 });
    // absurd: capped
    expect(decide(seen(503, { retryAfterMs: 86_400_000 }), 1, SCHEDULE, half)).to.deep.equal({ kind: 'retry', delayMs: 1_800_000 });
    expect(retryAfterCap([100, 200])).to.equal(60_000);
    // not on a status that is not retried
    expect(decide(seen(400, { retryAfterMs: 1_000 }), 1, SCHEDULE)).to.deep.equal({ kind: 'failed' });
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2024-05-14T09:00:00Z');
    expect(parseRetryAfter('120', now)).to.equal(120_000);
    expect(parseRetryAfter(' 0 ', now)).to.equal(0);
    expect(parseRetryAfter('Tue, 14 May 2024 09:00:30 GMT', now)).to.equal(30_000);
    expect(parseRetryAfter('Tue, 14 May 2024 08:00:00 GMT', now)).to.equal(0);
    for (const bad of [undefined, '', 'soon', '-5', '1.5', 'Tomorrow 5pm']) expect(parseRetryAfter(bad, now), String(bad)).to.equal(undefined);
  });

  it('reads the schedule from WEBHOOK_RETRY_SCHEDULE', () => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '100ms,200ms' }).webhookRetrySchedule).to.deep.equal([100, 200]);
    expect(loadConfig({}).webhookLeaseMarginMs).to.equal(30_000);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5s,,5m' })).to.throw(/WEBHOOK_RETRY_SCHEDULE/);
    expect(humanDuration(5_000)).to.equal('5 s');
    expect(humanDuration(300_000)).to.equal('5 min');
    expect(humanDuration(36_000_000)).to.equal('10 h');
    expect(humanDuration(150)).to.equal('150 ms');
  });
});

describe('webhook signature', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

  it('matches the standardwebhooks reference implementation', () => {
    const at = new Date('2024-05-14T09:21:07Z');
    const body = '{"medium":"event","contact":"a@b.co","type":"EMAIL","date":"2024-05-14","org_id":"42","event":"view"}';
    const ours = sign(signingKey(secret), 'msg_1', Math.floor(at.getTime() / 1000), body);
    expect(ours).to.equal(new Webhook(secret).sign('msg_1', at, body));
  });

  it('builds headers that verify, with the bearer token only when set', () => {
    const body = '{"x":1}';
    const h = deliveryHeaders({ authToken: 'tok', key: signingKey(secret) }, 'msg_2', body, 'UA');
    expect(new Webhook(secret).verify(body, h)).to.deep.equal({ x: 1 });
    expect(h.authorization).to.equal('Bearer tok');
    expect(deliveryHeaders({ authToken: null, key: signingKey(secret) }, 'msg_2', body, 'UA')).to.not.have.property('authorization');
  });
});
