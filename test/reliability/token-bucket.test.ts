// The token bucket behind the tracking limits (src/http/rate-limit.ts): a
// burst, an even refill, no double budget at a window edge, bounded memory;
// and client addresses: an IPv6 client counted by its /64, an IPv4-mapped
// address as IPv4, so every address of one /64 shares one budget.
import { expect } from 'chai';
import { clientAddressKey } from '../../src/http/client-address.ts';
import { SWEEP_MS, createRateLimiter, createRecentKeys, createTokenBucket } from '../../src/http/rate-limit.ts';
import { type RefusalReason, createTrafficLimits } from '../../src/http/traffic-limits.ts';

describe('token bucket and client addresses', () => {
  it('lets a key burst its budget, then refills evenly, and allows no double budget at a window edge (a fixed window does)', () => {
    let now = 0;
    const bucket = createTokenBucket({ limit: 60, windowMs: 60_000, now: () => now });
    const fixed = createRateLimiter({ limit: 60, windowMs: 60_000, now: () => now });
    const burst = (l: { hit(k: string): { allowed: boolean } }) => {
      let ok = 0;
      for (let i = 0; i < 200; i++) if (l.hit('k').allowed) ok++;
      return ok;
    };
    expect(burst(bucket)).to.equal(60);
    expect(burst(fixed)).to.equal(60);
    now = 60_000 - 1; // just before the fixed window ends: nothing new for either ...
    now = 60_000; // ... and just after it: the fixed window allows a whole new budget, the bucket what refilled
    expect(burst(fixed)).to.equal(60);
    expect(burst(bucket)).to.equal(60); // a minute has passed: refilled to the full budget, not more
    now = 61_000; // a second later: the bucket has refilled one, the fixed window none
    expect(burst(bucket)).to.equal(1);
    expect(burst(fixed)).to.equal(0);
    const d = bucket.hit('k');
    expect(d).to.deep.include({ allowed: false, retryAfterSeconds: 1 });
    // a hit costing more than what has refilled waits for it: 10 s later, 10 tokens are back
    now = 71_000;
    expect(bucket.hit('k', 20).allowed).to.equal(false);
    expect(bucket.hit('k', 10).allowed).to.equal(true);
    expect(bucket.hit('k').allowed).to.equal(false);
  });

  it('keeps its memory bounded: full buckets are forgotten, at most maxKeys live', () => {
    let now = 0;
    const bucket = createTokenBucket({ limit: 10, windowMs: 1000, maxKeys: 100, now: () => now });
    for (let i = 0; i < 1000; i++) bucket.hit(`k${i}`);
    expect(bucket.size).to.be.at.most(100);
    now = 5000;
    bucket.hit('fresh');
    expect(bucket.size).to.equal(1);
  });

  it('keeps the recent identities bounded: the least recently seen are forgotten first, an eighth at a time, and expired ones are swept', () => {
    let now = 0;
    const seen = createRecentKeys({ ttlMs: 60_000, maxKeys: 80, now: () => now });
    for (let i = 0; i < 80; i++) {
      seen.add(`k${i}`);
      now += 1;
    }
    seen.add('k0'); // seen again: now the most recent
    expect(seen.size).to.equal(80);
    seen.add('new'); // at the cap: the 10 least recently seen go (k1…k10), not k0
    expect(seen.size).to.equal(71);
    for (let i = 1; i <= 10; i++) expect(seen.has(`k${i}`), `k${i}`).to.equal(false);
    for (const k of ['k0', 'k11', 'k79', 'new']) expect(seen.has(k), k).to.equal(true);
    // under a flood of new keys it never holds more than maxKeys
    for (let i = 0; i < 10_000; i++) {
      seen.add(`f${i}`);
      expect(seen.size).to.be.at.most(80);
    }
    expect(seen.has('f9999')).to.equal(true);
    // expired: none is seen any more, and the next new key sweeps them all
    now += 60_000 + SWEEP_MS;
    expect(seen.has('f9999')).to.equal(false);
    seen.add('late');
    expect(seen.size).to.equal(1);
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped address as IPv4', () => {
    expect(clientAddressKey('203.0.113.7')).to.equal('203.0.113.7');
    expect(clientAddressKey('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    expect(clientAddressKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).to.equal('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:db8::7')).to.equal('2001:db8:0:0::/64');
    expect(clientAddressKey('::1')).to.equal('0:0:0:0::/64');
    expect(clientAddressKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
  });

  it('makes every address of one IPv6 /64 share one budget', () => {
    let now = 0;
    const refused: RefusalReason[] = [];
    const limits = createTrafficLimits(
      'tracking',
      { ip: { limit: 5, windowMs: 60_000 }, org: undefined, identify: undefined, identifyNetwork: undefined },
      (r) => refused.push(r),
      () => now,
    );
    for (let i = 0; i < 5; i++) limits.ip(`2001:db8:5:6::${i + 1}`);
    expect(() => limits.ip('2001:db8:5:6:ffff::1')).to.throw();
    expect(refused).to.deep.equal(['ip_rate_limited']);
    limits.ip('2001:db8:5:7::1'); // another /64
    now += 1;
  });
});
