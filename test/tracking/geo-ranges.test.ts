// The geo ranges file (what the service answers from) against the maxmind
// reader over the same mmdb files (what it answered from before): the same
// answer for every address tried — random ones, the first and last address
// of ranges, the ends of the address spaces — with the default DB-IP data and
// with small files that exercise the fallback between files.
import { copyFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadMmdbReference, prepareGeoRanges } from '../../src/geo/geo.service.ts';
import { publicAddress } from '../../src/geo/address.rules.ts';
import { MmdbLocator, openSource } from '../../src/geo/mmdb.locator.ts';
import { buildRangesFile } from '../../src/geo/ranges-file.build.ts';
import { RangesLocator } from '../../src/geo/ranges.locator.ts';
import { double, writeMmdb } from '../support/mmdb-writer.ts';

/** A small deterministic PRNG, so that a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
const hex = (n: number) => n.toString(16);

/** The address before (-1) or after (+1) an IPv6 address given as 8 groups, wrapping at the ends. */
function v6Step(ip: string, step: 1 | -1): string {
  const g = ip.split(':').map((x) => parseInt(x, 16));
  for (let i = 7; i >= 0; i--) {
    g[i] = (g[i]! + step + 0x10000) & 0xffff;
    if ((step === 1 && g[i] !== 0) || (step === -1 && g[i] !== 0xffff)) break;
  }
  return g.map(hex).join(':');
}

function v4Step(ip: string, step: 1 | -1): string {
  const n = ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
  return v4((n + step + 2 ** 32) % 2 ** 32);
}

/** Addresses at and around the starts of `samples` ranges of each family, plus the ends of both spaces. */
function edges(r: RangesLocator, samples: number, rand: () => number): string[] {
  const out = [
    '0.0.0.0',
    '0.0.0.1',
    '1.0.0.0',
    '1.0.0.1',
    '223.255.255.255',
    '255.255.255.255',
    '::',
    '2000::',
    '2000::1',
    '3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  ];
  for (const version of [4, 6] as const) {
    const n = r.count(version);
    const step = version === 4 ? v4Step : v6Step;
    const picks = n <= samples ? Array.from({ length: n }, (_, i) => i) : Array.from({ length: samples }, () => Math.floor(rand() * n));
    for (const i of picks) {
      const start = r.rangeStart(version, i);
      out.push(start, step(start, 1), step(start, -1));
    }
  }
  return out;
}

function compareAll(ranges: RangesLocator, reference: MmdbLocator, addresses: string[]): number {
  let located = 0;
  for (const ip of addresses) {
    const want = reference.locate(ip);
    expect(rangesLocate(ranges, ip), ip).to.deep.equal(want);
    if (want) located++;
  }
  return located;
}

function rangesLocate(r: RangesLocator, ip: string) {
  const addr = publicAddress(ip);
  return addr ? r.lookup(addr) : null;
}

describe('geo ranges file against the maxmind reader', function () {
  this.timeout(300_000);

  it('answers as the maxmind reader for the default DB-IP data: random addresses, range edges, both ends', () => {
    const reference = loadMmdbReference(undefined)!;
    const ranges = new RangesLocator(prepareGeoRanges(undefined)!);
    try {
      const rand = prng(14);
      const addresses: string[] = [];
      for (let i = 0; i < 100_000; i++) addresses.push(v4(Math.floor(rand() * 2 ** 32)));
      // IPv6: mostly in the allocated 2000::/3, some anywhere
      for (let i = 0; i < 40_000; i++) {
        const g = Array.from({ length: 8 }, () => Math.floor(rand() * 0x10000));
        if (i % 8 !== 0) g[0] = 0x2000 | (g[0]! & 0x1fff);
        if (i % 3 === 0) g.fill(0, 2 + Math.floor(rand() * 6)); // short addresses, like most assigned ones
        addresses.push(g.map(hex).join(':'));
      }
      addresses.push(...edges(ranges, 20_000, rand));
      const located = compareAll(ranges, reference, addresses);
      console.log(
        `      geo ranges: ${addresses.length} addresses compared, ${located} located, ${ranges.count(4)} IPv4 and ${ranges.count(6)} IPv6 ranges`,
      );
      expect(located).to.be.above(50_000);
    } finally {
      ranges.close();
    }
  });

  describe('small files', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'trackway-geo-ranges-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    const place = (cc: string, city: string, lat: number, lon: number, timezone = '') => ({
      city,
      country_code: cc,
      latitude: double(lat),
      longitude: double(lon),
      postcode: '',
      state1: `${city} region`,
      state2: '',
      timezone,
    });

    it('answers as the maxmind reader where files overlap, leave gaps, hold empty records or IPv4 in an IPv6 tree', () => {
      const v4File = path.join(dir, 'a-ipv4.mmdb');
      writeFileSync(
        v4File,
        writeMmdb({
          ipVersion: 4,
          databaseType: 'city ipv4',
          networks: [
            { network: '81.2.69.0/24', data: place('GB', 'London', 51.5142, -0.0931) },
            { network: '81.2.70.0/23', data: place('GB', 'Leeds', 53.8, -1.55, 'Europe/London') },
            { network: '5.44.0.0/16', data: place('JP', 'Chiyoda', 35.694, 139.754, 'Asia/Tokyo') },
            // says nothing: the next file is asked
            { network: '9.9.9.0/24', data: { city: '', country_code: 'ZZ', postcode: '', state1: '', state2: '', timezone: '' } },
            { network: '255.255.255.255/32', data: place('US', 'Edge', 40.7, -74) },
          ],
        }),
      );
      const v6File = path.join(dir, 'b-ipv6.mmdb');
      writeFileSync(
        v6File,
        writeMmdb({
          ipVersion: 6,
          databaseType: 'city ipv6',
          recordSize: 28,
          networks: [
            { network: '2a02:d8::/32', data: place('SE', 'Stockholm', 59.3294, 18.0686) },
            { network: '2a02:d9:8000::/33', data: place('SE', 'Uppsala', 59.86, 17.64) },
            { network: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124', data: place('AQ', 'End', -75, 0) },
            // IPv4 held in the IPv6 tree (::/96): asked after the IPv4 file
            { network: '9.9.0.0/16', data: place('CH', 'Zurich', 47.37, 8.54) },
            { network: '81.2.0.0/16', data: place('FR', 'Paris', 48.85, 2.35) },
          ],
        }),
      );
      const files = [v4File, v6File];
      const target = path.join(dir, 'test.twgeo');
      buildRangesFile(files, target);
      const ranges = new RangesLocator(target);
      const reference = new MmdbLocator(files.map(openSource));
      try {
        const rand = prng(12);
        const addresses = edges(ranges, 1_000, rand);
        for (const base of ['81.2.68.0', '81.2.69.0', '81.2.71.255', '5.44.0.0', '9.9.9.0', '9.9.0.0', '9.9.255.255', '81.2.0.0']) {
          for (let k = -2; k <= 300; k += 7) addresses.push(v4((base.split('.').reduce((a, o) => a * 256 + Number(o), 0) + k + 2 ** 32) % 2 ** 32));
        }
        addresses.push(
          '2a02:d8::1',
          '2a02:d8:ffff:ffff:ffff:ffff:ffff:ffff',
          '2a02:d9:7fff:ffff:ffff:ffff:ffff:ffff',
          '2a02:d9:8000::',
          '2a02:da::',
          '::9.9.9.9',
          '::ffff:9.9.9.9',
        );
        for (let i = 0; i < 5_000; i++) addresses.push(v4(Math.floor(rand() * 2 ** 32)));
        const located = compareAll(ranges, reference, addresses);
        expect(located).to.be.above(100);
        // the fallback is real: 9.9.9.x says nothing in the IPv4 file, the IPv6 file's ::/96 answers
        expect(rangesLocate(ranges, '9.9.9.9')).to.include({ country_code: 'CH', city: 'Zurich' });
        expect(rangesLocate(ranges, '81.2.69.1')).to.include({ city: 'London' });
        expect(rangesLocate(ranges, '81.2.1.1')).to.include({ city: 'Paris' });
        expect(rangesLocate(ranges, '2a02:d9:8000::1')).to.include({ city: 'Uppsala' });
      } finally {
        ranges.close();
      }
    });

    it('rejects a file that is not a ranges file, or is cut short', () => {
      const bad = path.join(dir, 'bad.twgeo');
      writeFileSync(bad, 'not a ranges file at all');
      expect(() => new RangesLocator(bad)).to.throw(/not a geo ranges file/);
      const short = path.join(dir, 'short.twgeo');
      copyFileSync(path.join(dir, 'test.twgeo'), short);
      truncateSync(short, 2000);
      expect(() => new RangesLocator(short)).to.throw(/truncated/);
    });
  });
});
