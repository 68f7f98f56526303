import { expect } from 'chai';
import { ConfigError, loadConfig, parseDuration } from '../../src/config.ts';

describe('config', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    expect(c.port).to.equal(8080);
    expect(c.host).to.equal('0.0.0.0');
    expect(c.publicUrl).to.equal('http://localhost:8080');
    expect(c.jwtTtlSeconds).to.equal(86_400);
    expect(c.webhookRetrySchedule).to.deep.equal([5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
    // tracking limits are on by default (README "Security" sizes them)
    expect(c.trackingLimits).to.deep.equal({
      ip: { limit: 6000, windowMs: 60_000 },
      org: { limit: 60_000, windowMs: 60_000 },
      identify: { limit: 60, windowMs: 60_000 },
      identifyNetwork: { limit: 600, windowMs: 60_000 },
    });
    expect(c.loginRateLimit).to.deep.equal({ limit: 10, windowMs: 900_000 });
    expect(c.loginAddressRateLimit).to.deep.equal({ limit: 30, windowMs: 900_000 });
    expect(c.passwordHashCost).to.equal(17);
    expect(c.metricsToken).to.equal(undefined);
    // work-conserving by default: one organisation alone may use all but the reserve
    expect(c.webhookShare).to.deep.equal({ perIntegration: 8, perOrganisation: 448, global: 512, reserve: 64, slowMs: 2000 });
    expect(
      loadConfig({
        WEBHOOK_CONCURRENCY: '32',
        WEBHOOK_ORGANISATION_SHARE: '256',
        WEBHOOK_DISPATCH_CAPACITY: '1024',
        WEBHOOK_DISPATCH_RESERVE: '100',
        WEBHOOK_SLOW_ENDPOINT: '5s',
      }).webhookShare,
    ).to.deep.equal({
      perIntegration: 32,
      perOrganisation: 256,
      global: 1024,
      reserve: 100,
      slowMs: 5000,
    });
    // a small capacity keeps an eighth of itself (at least one slot) in reserve
    expect(loadConfig({ WEBHOOK_DISPATCH_CAPACITY: '40' }).webhookShare).to.include({ global: 40, reserve: 5, perOrganisation: 35 });
    expect(loadConfig({ WEBHOOK_DISPATCH_CAPACITY: '8', WEBHOOK_CONCURRENCY: '4' }).webhookShare).to.include({ reserve: 1, perOrganisation: 7 });
    // one dispatcher per host unless more workers are asked to dispatch
    expect(c.webhookDispatchWorkers).to.equal(1);
    expect(loadConfig({ WEBHOOK_DISPATCH_WORKERS: '2' }).webhookDispatchWorkers).to.equal(2);
    expect(loadConfig({ WEBHOOK_DISPATCH_WORKERS: 'all' }).webhookDispatchWorkers).to.equal(undefined);
    // a dispatcher sends on a thread of its own unless told not to
    expect(c.webhookSendThread).to.equal(true);
    expect(loadConfig({ WEBHOOK_SEND_THREAD: 'false' }).webhookSendThread).to.equal(false);
    // two ingest batches in flight per host, shared by its workers
    expect(c.ingestInFlight).to.equal(2);
    expect(loadConfig({ INGEST_IN_FLIGHT: '4' }).ingestInFlight).to.equal(4);
    // the embedded PostgreSQL takes a free port unless TRACKWAY_PG_PORT pins it
    expect(c.pgPort).to.equal(undefined);
    expect(loadConfig({ TRACKWAY_PG_PORT: '5433' }).pgPort).to.equal(5433);
  });

  const bad: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /^PORT: "eighty" is not a whole number$/],
    [{ PORT: '70000' }, /^PORT: 70000 is outside 0..65535$/],
    [{ TRACKWAY_PG_PORT: '0' }, /^TRACKWAY_PG_PORT: 0 is outside 1..65535$/],
    [{ TRACKWAY_PG_PORT: 'pg' }, /^TRACKWAY_PG_PORT: "pg" is not a whole number$/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: must start with postgres/],
    [{ PUBLIC_URL: 'ftp://x' }, /^PUBLIC_URL: /],
    [{ JWT_TTL: 'forever' }, /^JWT_TTL: "forever" is not a duration/],
    [{ JWT_TTL: '5s' }, /^JWT_TTL: must be at least 60s$/],
    [{ JWT_SECRET: 'short' }, /^JWT_SECRET: must be at least 32 characters$/],
    [{ TRACKWAY_SECRET_KEY: 'abc' }, /^TRACKWAY_SECRET_KEY: must be 32 bytes/],
    [{ TRUST_PROXY: 'maybe' }, /^TRUST_PROXY: "maybe" is not a boolean/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: "loud" is not one of/],
    [{ WEBHOOK_RETRY_SCHEDULE: '5s,soon' }, /^WEBHOOK_RETRY_SCHEDULE: "soon" is not a duration/],
    [{ TRACKING_RATE_LIMIT: 'lots' }, /^TRACKING_RATE_LIMIT: "lots" is not a rate limit/],
    [{ TRACKWAY_BOOTSTRAP_PLATFORM: 'acme' }, /must be set together$/],
    [{ TRACKING_IDENTIFY_RATE_LIMIT: '5' }, /^TRACKING_IDENTIFY_RATE_LIMIT: "5" is not a rate limit/],
    [{ PASSWORD_HASH_COST: '12' }, /^PASSWORD_HASH_COST: 12 is outside 14..20$/],
    [{ METRICS_TOKEN: 'short' }, /^METRICS_TOKEN: must be at least 16/],
    [{ WEBHOOK_CONCURRENCY: '0' }, /^WEBHOOK_CONCURRENCY: 0 is outside 1..1024$/],
    [{ WEBHOOK_CONCURRENCY: '200', WEBHOOK_ORGANISATION_SHARE: '100' }, /^WEBHOOK_CONCURRENCY: must be at most WEBHOOK_ORGANISATION_SHARE$/],
    [{ INGEST_IN_FLIGHT: '0' }, /^INGEST_IN_FLIGHT: 0 is outside 1..64$/],
    [{ INGEST_IN_FLIGHT: 'many' }, /^INGEST_IN_FLIGHT: "many" is not a whole number$/],
    [{ WEBHOOK_DISPATCH_WORKERS: '0' }, /^WEBHOOK_DISPATCH_WORKERS: "0" is not a whole number from 1 to 64 \(or all\)$/],
    [{ WEBHOOK_ORGANISATION_SHARE: '600' }, /^WEBHOOK_ORGANISATION_SHARE: must be at most WEBHOOK_DISPATCH_CAPACITY less WEBHOOK_DISPATCH_RESERVE$/],
    [{ WEBHOOK_DISPATCH_RESERVE: '512' }, /^WEBHOOK_DISPATCH_RESERVE: must be less than WEBHOOK_DISPATCH_CAPACITY$/],
    [{ WEBHOOK_SLOW_ENDPOINT: '1ms' }, /^WEBHOOK_SLOW_ENDPOINT: must be from 10ms to 60s$/],
    [{ WEBHOOK_SEND_THREAD: 'sometimes' }, /^WEBHOOK_SEND_THREAD: "sometimes" is not a boolean/],
    [{ WEBHOOK_SLOW_ENDPOINT: 'slow' }, /^WEBHOOK_SLOW_ENDPOINT: "slow" is not a duration/],
  ];
  for (const [env, message] of bad) {
    it(`refuses ${JSON.stringify(env)} with a one-line reason`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
      try {
        loadConfig(env);
      } catch (e) {
        expect((e as Error).message).to.not.include('\n');
      }
    });
  }

  it('parses durations and rate limits', () => {
    expect(parseDuration('X', '250ms')).to.equal(250);
    expect(parseDuration('X', '2h')).to.equal(7_200_000);
    expect(parseDuration('X', '3')).to.equal(3000);
    // TRACKING_RATE_LIMIT sets the per-address and per-organisation limits together (as in older versions)
    expect(loadConfig({ TRACKING_RATE_LIMIT: '100/1s' }).trackingLimits).to.deep.include({
      ip: { limit: 100, windowMs: 1000 },
      org: { limit: 100, windowMs: 1000 },
    });
    expect(loadConfig({ LOGIN_RATE_LIMIT: 'off' }).loginRateLimit).to.equal(undefined);
    expect(loadConfig({ LOGIN_RATE_LIMIT: 'off' }).loginAddressRateLimit).to.equal(undefined);
  });

  it('lets every tracking limit be overridden or turned off, one by one or all at once', () => {
    expect(loadConfig({ TRACKING_RATE_LIMIT: 'off' }).trackingLimits).to.deep.equal({
      ip: undefined,
      org: undefined,
      identify: undefined,
      identifyNetwork: undefined,
    });
    expect(loadConfig({ TRACKING_RATE_LIMIT: 'off', TRACKING_IDENTIFY_RATE_LIMIT: '5/1m' }).trackingLimits).to.deep.equal({
      ip: undefined,
      org: undefined,
      identify: { limit: 5, windowMs: 60_000 },
      identifyNetwork: undefined,
    });
    expect(loadConfig({ TRACKING_IDENTIFY_NETWORK_RATE_LIMIT: '100/1m' }).trackingLimits.identifyNetwork).to.deep.equal({
      limit: 100,
      windowMs: 60_000,
    });
    expect(loadConfig({ TRACKING_IDENTIFY_NETWORK_RATE_LIMIT: 'off' }).trackingLimits.identifyNetwork).to.equal(undefined);
    expect(loadConfig({ TRACKING_RATE_LIMIT: '100/1s', TRACKING_ORG_RATE_LIMIT: 'off' }).trackingLimits).to.deep.equal({
      ip: { limit: 100, windowMs: 1000 },
      org: undefined,
      identify: { limit: 60, windowMs: 60_000 },
      identifyNetwork: { limit: 600, windowMs: 60_000 },
    });
    expect(loadConfig({ TRACKING_IP_RATE_LIMIT: '10/1s' }).trackingLimits.ip).to.deep.equal({ limit: 10, windowMs: 1000 });
    expect(loadConfig({ LOGIN_ADDRESS_RATE_LIMIT: '3/1m' }).loginAddressRateLimit).to.deep.equal({ limit: 3, windowMs: 60_000 });
  });
});
