// One table of special-purpose ranges: webhook targets in them are refused and
// client addresses in them have no location; the two answers agree everywhere.
import { expect } from 'chai';
import { SPECIAL_RANGES, splitCidr } from '../../src/ip-ranges.ts';
import { publicAddress } from '../../src/geo/address.rules.ts';
import { refusedRange } from '../../src/webhooks/ssrf.client.ts';

/** The first and last IPv4 address of a CIDR. */
function v4Ends(cidr: string): string[] {
  const [a, bits] = splitCidr(cidr);
  const n = a.split('.').reduce((x, o) => x * 256 + Number(o), 0);
  const last = n + 2 ** (32 - bits) - 1;
  const dotted = (v: number) => [24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join('.');
  return [dotted(n), dotted(last)];
}

describe('special-purpose address ranges', () => {
  it('refuses as a webhook target and never locates the ends of every IPv4 range', () => {
    for (const { v4 } of SPECIAL_RANGES) {
      for (const ip of v4.flatMap(v4Ends)) {
        expect(refusedRange(ip), ip).to.be.a('string');
        expect(publicAddress(ip), ip).to.equal(null);
        expect(publicAddress(`::ffff:${ip}`), `::ffff:${ip}`).to.equal(null);
      }
    }
  });

  it('refuses and never locates the first addresses of every IPv6 range', () => {
    for (const { v6 } of SPECIAL_RANGES) {
      for (const cidr of v6) {
        const [a] = splitCidr(cidr);
        for (const ip of [a, a.endsWith('::') ? `${a}1` : a]) {
          expect(refusedRange(ip), ip).to.be.a('string');
          expect(publicAddress(ip), ip).to.equal(null);
        }
      }
    }
  });

  it('lets public addresses through both, next to the ranges', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0', '2606:4700:4700::1111', '2a00:1450::1']) {
      expect(refusedRange(ip), ip).to.equal(undefined);
      expect(publicAddress(ip), ip).to.not.equal(null);
    }
  });
});
