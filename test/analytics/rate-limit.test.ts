// docs/design.md "Limits": analytics registrations are limited per client IP (20 per
// hour by default, REGISTRATION_RATE_LIMIT), answered 429 {status: error,
// message} with Retry-After. The limiter itself (src/http/rate-limit.ts) is
// tested on a fake clock, so nothing here depends on timing.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { createRateLimiter } from '../../src/http/rate-limit.ts';
import { uniqueIp } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { expectLimited as limited } from '../support/expect.ts';

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('rate limiter (src/http/rate-limit.ts)', () => {
  it('allows `limit` hits per key in a window, then refuses with the seconds left in the window', () => {
    const c = clock();
    const rl = createRateLimiter({ limit: 3, windowMs: 60_000, now: c.now });
    expect(rl.hit('a')).to.deep.equal({ allowed: true, remaining: 2, retryAfterSeconds: 0 });
    c.t += 10_000;
    expect(rl.hit('a')).to.deep.equal({ allowed: true, remaining: 1, retryAfterSeconds: 0 });
    expect(rl.hit('a')).to.deep.equal({ allowed: true, remaining: 0, retryAfterSeconds: 0 });
    expect(rl.hit('a')).to.deep.equal({ allowed: false, remaining: 0, retryAfterSeconds: 50 });
    c.t += 49_500;
    expect(rl.hit('a')).to.deep.equal({ allowed: false, remaining: 0, retryAfterSeconds: 1 });
    // other keys are counted apart
    expect(rl.hit('b').allowed).to.equal(true);
  });

  it('starts a new window once the old one has passed (refused hits do not extend it)', () => {
    const c = clock();
    const rl = createRateLimiter({ limit: 1, windowMs: 1_000, now: c.now });
    expect(rl.hit('k').allowed).to.equal(true);
    for (let i = 0; i < 5; i++) {
      c.t += 199;
      expect(rl.hit('k').allowed).to.equal(false);
    }
    c.t += 5; // 1,000 ms after the first hit
    expect(rl.hit('k')).to.deep.equal({ allowed: true, remaining: 0, retryAfterSeconds: 0 });
    expect(rl.hit('k').retryAfterSeconds).to.equal(1);
  });

  it('forgets a key on reset', () => {
    const rl = createRateLimiter({ limit: 1, windowMs: 60_000, now: clock().now });
    expect(rl.hit('k').allowed).to.equal(true);
    expect(rl.hit('k').allowed).to.equal(false);
    rl.reset('k');
    expect(rl.hit('k').allowed).to.equal(true);
  });

  it('sweeps expired keys and holds at most maxKeys, dropping the oldest windows first', () => {
    const c = clock();
    const rl = createRateLimiter({ limit: 1, windowMs: 1_000, maxKeys: 3, now: c.now });
    for (const k of ['a', 'b', 'c']) {
      rl.hit(k);
      c.t += 100;
    }
    expect(rl.size).to.equal(3);
    rl.hit('d'); // over the cap: a (the oldest window) goes
    expect(rl.size).to.equal(3);
    expect(rl.hit('b').allowed).to.equal(false);
    expect(rl.hit('c').allowed).to.equal(false);
    expect(rl.hit('d').allowed).to.equal(false);
    expect(rl.hit('a').allowed).to.equal(true); // started over (and b went to make room)
    expect(rl.hit('c').allowed).to.equal(false);
    c.t += 10_000; // every window has passed: a new key sweeps them all
    rl.hit('e');
    expect(rl.size).to.equal(1);
  });

  it('keeps memory bounded under a flood of distinct keys', () => {
    const c = clock();
    const rl = createRateLimiter({ limit: 5, windowMs: 60_000, maxKeys: 1_000, now: c.now });
    for (let i = 0; i < 20_000; i++) {
      rl.hit(`ip${i}`);
      // over the cap an eighth of the oldest go at once (keepWithin, src/recent-cache.ts)
      if (i >= 1_000) expect(rl.size).to.be.within(1_000 - 125 + 1, 1_000);
    }
  });

  it('refuses nonsense options', () => {
    expect(() => createRateLimiter({ limit: 0, windowMs: 1 })).to.throw(RangeError);
    expect(() => createRateLimiter({ limit: 1.5, windowMs: 1 })).to.throw(RangeError);
    expect(() => createRateLimiter({ limit: 1, windowMs: 0 })).to.throw(RangeError);
    expect(() => createRateLimiter({ limit: 1, windowMs: 1, maxKeys: 0 })).to.throw(RangeError);
  });
});

const expectLimited = (r: Parameters<typeof limited>[0], windowSeconds: number) =>
  limited(r, { status: 'error' }, { windowSeconds, message: 'text' });

describe('analytics registration rate limit (REGISTRATION_RATE_LIMIT=2/1m)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, REGISTRATION_RATE_LIMIT: '2/1m', TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  it('accepts 2 registrations per client IP, then answers 429 with Retry-After', async () => {
    const ip = uniqueIp();
    expect((await register(srv, registration(), { ip })).status).to.equal(200);
    expect((await register(srv, registration(), { ip })).status).to.equal(200);
    const body = registration();
    expectLimited(await register(srv, body, { ip }), 60);
    const org = await srv.database.handle.db.selectFrom('organisations').select('id').where('domain', '=', body.domain).executeTakeFirst();
    expect(org).to.equal(undefined);
    // another client is unaffected
    expect((await register(srv, registration(), { ip: uniqueIp() })).status).to.equal(200);
  });

  it('counts failed attempts too, so the token cannot be guessed faster than the limit', async () => {
    const ip = uniqueIp();
    expect((await register(srv, registration(), { ip, token: 'guess-1' })).status).to.equal(401);
    expect((await register(srv, registration(), { ip, token: 'guess-2' })).status).to.equal(401);
    expectLimited(await register(srv, registration(), { ip, token: 'guess-3' }), 60);
    expectLimited(await register(srv, registration(), { ip }), 60);
  });

  it('limits a burst of parallel registrations from one IP', async () => {
    const ip = uniqueIp();
    const replies = await Promise.all(Array.from({ length: 6 }, () => register(srv, registration(), { ip })));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([200, 200, 429, 429, 429, 429]);
  });
});

describe('analytics registration rate limit without TRUST_PROXY', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, REGISTRATION_RATE_LIMIT: '2/1m' });
  });
  after(() => srv.stop());

  it('keys on the connection address and ignores X-Forwarded-For', async () => {
    expect((await register(srv, registration(), { ip: uniqueIp() })).status).to.equal(200);
    expect((await register(srv, registration(), { ip: uniqueIp() })).status).to.equal(200);
    expectLimited(await register(srv, registration(), { ip: uniqueIp() }), 60);
  });
});

describe('analytics registration rate limit by default (20 per hour)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true' });
  });
  after(() => srv.stop());

  it('defaults to 20 per IP per hour and reads REGISTRATION_RATE_LIMIT', () => {
    expect(loadConfig({}).registrationRateLimit).to.deep.equal({ limit: 20, windowMs: 3_600_000 });
    expect(loadConfig({ REGISTRATION_RATE_LIMIT: '3/1m' }).registrationRateLimit).to.deep.equal({ limit: 3, windowMs: 60_000 });
    expect(loadConfig({ REGISTRATION_RATE_LIMIT: 'off' }).registrationRateLimit).to.equal(undefined);
  });

  it('answers the 21st attempt from one IP within the hour with 429', async () => {
    const ip = uniqueIp();
    // wrong tokens: counted like registrations, without 20 scrypt hashes
    for (let i = 0; i < 20; i++) expect((await register(srv, registration(), { ip, token: `wrong-${i}` })).status).to.equal(401);
    expectLimited(await register(srv, registration(), { ip }), 3600);
  });
});
