import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Reader } from 'maxmind';
import { GeoIpError, loadGeoLocator, publicAddress, zoneFor } from '../../src/geo/geo.service.ts';
import { double, u32, writeMmdb } from '../support/mmdb-writer.ts';

/** A GeoIP2/GeoLite2 City record, as MaxMind lays it out. */
function maxmindCity(o: { cc: string; country: string; region?: string; city?: string; lat: number; lon: number; tz?: string }) {
  return {
    ...(o.city ? { city: { geoname_id: u32(1000), names: { de: `${o.city} (de)`, en: o.city } } } : {}),
    continent: { code: 'EU', geoname_id: u32(6255148), names: { en: 'Europe' } },
    country: { geoname_id: u32(2000), iso_code: o.cc, names: { en: o.country } },
    location: { accuracy_radius: 50, latitude: double(o.lat), longitude: double(o.lon), ...(o.tz ? { time_zone: o.tz } : {}) },
    registered_country: { geoname_id: u32(2000), iso_code: o.cc, names: { en: o.country } },
    subdivisions: o.region ? [{ geoname_id: u32(3000), iso_code: 'X', names: { en: o.region } }] : [],
  };
}

/** An ip-location-db record (country_code, state1, state2, city, postcode, latitude, longitude, timezone). */
function ipLocationDb(cc: string, state1: string, city: string, lat: number, lon: number, timezone = '') {
  return { city, country_code: cc, latitude: double(lat), longitude: double(lon), postcode: '', state1, state2: '', timezone };
}

describe('geo-IP', () => {
  describe('with the shipped DB-IP Lite City data', () => {
    const geo = loadGeoLocator(undefined);

    it('locates a public IPv4 address', () => {
      // 193.0.6.139: RIPE NCC, Amsterdam
      const loc = geo.locate('193.0.6.139');
      expect(loc).to.include({ country_code: 'NL', timezone: 'Europe/Amsterdam' });
      expect(loc!.latitude).to.be.within(50, 54);
      expect(loc!.longitude).to.be.within(3, 8);
      expect(loc!.city).to.be.a('string');
      expect(loc!.region).to.be.a('string');
    });

    it('locates a public IPv6 address', () => {
      // 2001:67c:2e8:22::c100:68b: RIPE NCC, Amsterdam
      const loc = geo.locate('2001:67c:2e8:22::c100:68b');
      expect(loc).to.include({ country_code: 'NL', timezone: 'Europe/Amsterdam' });
      expect(loc!.latitude).to.be.within(50, 54);
      expect(loc!.longitude).to.be.within(3, 8);
      const jp = geo.locate('2001:200::1'); // WIDE project, Japan
      expect(jp).to.include({ country_code: 'JP', timezone: 'Asia/Tokyo' });
    });

    it('unwraps IPv4-mapped IPv6 addresses', () => {
      const plain = geo.locate('193.0.6.139');
      expect(geo.locate('::ffff:193.0.6.139')).to.deep.equal(plain);
      expect(geo.locate('::FFFF:c100:68b')).to.deep.equal(plain);
      expect(geo.locate('::ffff:127.0.0.1')).to.equal(null);
      expect(geo.locate('::ffff:10.1.2.3')).to.equal(null);
    });

    it('gives no location for loopback, private, link-local, CGNAT, documentation and other non-public addresses', () => {
      for (const ip of [
        '127.0.0.1',
        '127.8.9.10',
        '::1',
        '::',
        '0.0.0.0',
        '10.0.0.1',
        '172.16.5.4',
        '172.31.255.255',
        '192.168.1.1',
        '169.254.169.254',
        'fe80::1',
        'fe80::1%eth0',
        '100.64.0.1',
        '100.127.255.254',
        'fc00::1',
        'fd12:3456::1',
        '192.0.2.10',
        '198.51.100.10',
        '203.0.113.10',
        '2001:db8::1',
        '3fff::1',
        '224.0.0.251',
        'ff02::1',
        '255.255.255.255',
        '240.1.2.3',
        '198.18.0.1',
      ]) {
        expect(geo.locate(ip), ip).to.equal(null);
      }
    });

    it('gives no location for strings that are not addresses', () => {
      for (const ip of [
        '',
        'localhost',
        'abc',
        '1.2.3',
        '1.2.3.4.5',
        '256.1.1.1',
        '01.2.3.4',
        '1::2::3',
        '12345::1',
        ':::',
        '::ffff:999.1.1.1',
        'x'.repeat(500),
      ]) {
        expect(geo.locate(ip), ip).to.equal(null);
      }
      expect(geo.locate(undefined as never)).to.equal(null);
    });

    it('is loaded once and shared', () => {
      expect(loadGeoLocator(undefined)).to.equal(geo);
    });
  });

  describe('publicAddress', () => {
    it('normalises what it accepts', () => {
      expect(publicAddress(' 193.0.6.139 ')).to.deep.equal(['193.0.6.139', 4]);
      expect(publicAddress('[2001:67c:2e8::1]')).to.deep.equal(['2001:67c:2e8::1', 6]);
      expect(publicAddress('0:0:0:0:0:ffff:193.0.6.139')).to.deep.equal(['193.0.6.139', 4]);
      expect(publicAddress('100.63.255.255')).to.deep.equal(['100.63.255.255', 4]);
      expect(publicAddress('100.128.0.0')).to.deep.equal(['100.128.0.0', 4]);
      expect(publicAddress('172.32.0.1')).to.deep.equal(['172.32.0.1', 4]);
    });
  });

  describe('time zones when the data has none', () => {
    it('takes the country zone, or the zone nearest to the coordinates', () => {
      expect(zoneFor('NL', 52.37, 4.89)).to.equal('Europe/Amsterdam');
      expect(zoneFor('DE', 50.11, 8.68)).to.equal('Europe/Berlin'); // Frankfurt: not Busingen
      expect(zoneFor('US', 37.42, -122.08)).to.equal('America/Los_Angeles');
      expect(zoneFor('US', 41.88, -87.63)).to.equal('America/Chicago');
      expect(zoneFor('US', 40.71, -74.0)).to.equal('America/New_York');
      expect(zoneFor('AU', -33.87, 151.21)).to.equal('Australia/Sydney');
      expect(zoneFor('US', null, null)).to.equal('America/New_York');
      expect(zoneFor(null, 1, 2)).to.equal(null);
      expect(zoneFor('QQ', 1, 2)).to.equal(null);
    });
  });

  describe('GEOIP_DB files', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'trackway-geo-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    function write(name: string, buf: Buffer): string {
      const file = path.join(dir, name);
      writeFileSync(file, buf);
      return file;
    }

    it('the test writer produces files the maxmind reader reads back', () => {
      for (const recordSize of [24, 28, 32] as const) {
        const buf = writeMmdb({
          ipVersion: 6,
          databaseType: 'Test',
          recordSize,
          networks: [
            { network: '81.2.69.0/24', data: { a: 'x', n: 7, f: 1.5, b: true, list: ['p', 'q'] } },
            { network: '2a02:1::/32', data: { a: 'y' } },
          ],
        });
        const r = new Reader<Record<string, unknown>>(buf);
        expect(r.metadata).to.include({ ipVersion: 6, databaseType: 'Test', recordSize });
        expect(r.get('81.2.69.7')).to.deep.equal({ a: 'x', n: 7, f: 1.5, b: true, list: ['p', 'q'] });
        expect(r.get('2a02:1:ff::1')).to.deep.equal({ a: 'y' });
        expect(r.get('81.2.70.1')).to.equal(null);
        expect(r.get('2a02:2::1')).to.equal(null);
      }
    });

    it('reads a MaxMind GeoIP2/GeoLite2 City layout', () => {
      const file = write(
        'GeoIP2-City-Test.mmdb',
        writeMmdb({
          ipVersion: 6,
          databaseType: 'GeoIP2-City',
          languages: ['de', 'en'],
          networks: [
            {
              network: '81.2.69.0/24',
              data: maxmindCity({
                cc: 'GB',
                country: 'United Kingdom',
                region: 'England',
                city: 'London',
                lat: 51.5142,
                lon: -0.0931,
                tz: 'Europe/London',
              }),
            },
            {
              network: '2a02:d8::/32',
              data: maxmindCity({
                cc: 'SE',
                country: 'Sweden',
                region: 'Stockholm County',
                city: 'Stockholm',
                lat: 59.3294,
                lon: 18.0686,
                tz: 'Europe/Stockholm',
              }),
            },
            // no city, no subdivision, no time zone: the zone comes from the country
            { network: '89.160.0.0/17', data: maxmindCity({ cc: 'NO', country: 'Norway', lat: 59.95, lon: 10.75 }) },
          ],
        }),
      );
      const geo = loadGeoLocator(file);
      expect(geo.locate('81.2.69.160')).to.deep.equal({
        country_code: 'GB',
        region: 'England',
        city: 'London',
        latitude: 51.5142,
        longitude: -0.0931,
        timezone: 'Europe/London',
      });
      expect(geo.locate('::ffff:81.2.69.1')).to.include({ country_code: 'GB' });
      expect(geo.locate('2a02:d8:1::5')).to.deep.equal({
        country_code: 'SE',
        region: 'Stockholm County',
        city: 'Stockholm',
        latitude: 59.3294,
        longitude: 18.0686,
        timezone: 'Europe/Stockholm',
      });
      expect(geo.locate('89.160.20.112')).to.deep.equal({
        country_code: 'NO',
        region: null,
        city: null,
        latitude: 59.95,
        longitude: 10.75,
        timezone: 'Europe/Oslo',
      });
      expect(geo.locate('193.0.6.139')).to.equal(null); // not in this file
      expect(geo.locate('127.0.0.1')).to.equal(null);
    });

    it('reads the ip-location-db layout, one file per address family', () => {
      const v4 = write(
        'city-ipv4.mmdb',
        writeMmdb({
          ipVersion: 4,
          databaseType: 'city ipv4',
          networks: [
            { network: '81.2.69.0/24', data: ipLocationDb('GB', 'England', 'London', 51.5142, -0.0931) },
            { network: '5.44.0.0/16', data: ipLocationDb('JP', 'Tokyo', 'Chiyoda', 35.694, 139.754, 'Asia/Tokyo') },
          ],
        }),
      );
      const v6 = write(
        'city-ipv6.mmdb',
        writeMmdb({
          ipVersion: 6,
          databaseType: 'city ipv6',
          recordSize: 28,
          networks: [{ network: '2a02:d8::/32', data: ipLocationDb('SE', 'Stockholm County', 'Stockholm', 59.3294, 18.0686) }],
        }),
      );
      const geo = loadGeoLocator(`${v4}, ${v6}`);
      expect(geo.locate('81.2.69.160')).to.deep.equal({
        country_code: 'GB',
        region: 'England',
        city: 'London',
        latitude: 51.5142,
        longitude: -0.0931,
        timezone: 'Europe/London',
      });
      expect(geo.locate('5.44.1.2')).to.include({ country_code: 'JP', timezone: 'Asia/Tokyo' });
      expect(geo.locate('2a02:d8:1::5')).to.deep.equal({
        country_code: 'SE',
        region: 'Stockholm County',
        city: 'Stockholm',
        latitude: 59.3294,
        longitude: 18.0686,
        timezone: 'Europe/Stockholm',
      });
      expect(geo.locate('2a02:d9::1')).to.equal(null);
      // an IPv4 file alone answers no IPv6 address
      expect(loadGeoLocator(v4).locate('2a02:d8:1::5')).to.equal(null);
    });

    it('recognises the layout by the record shape when the database type does not name it', () => {
      const file = write(
        'custom.mmdb',
        writeMmdb({
          ipVersion: 6,
          databaseType: 'Acme-Geo',
          networks: [
            {
              network: '1.0.0.0/24',
              data: maxmindCity({ cc: 'AU', country: 'Australia', region: 'Queensland', city: 'Brisbane', lat: -27.47, lon: 153.02 }),
            },
          ],
        }),
      );
      expect(loadGeoLocator(file).locate('1.0.0.1')).to.deep.equal({
        country_code: 'AU',
        region: 'Queensland',
        city: 'Brisbane',
        latitude: -27.47,
        longitude: 153.02,
        timezone: 'Australia/Brisbane',
      });
    });

    it('refuses a GEOIP_DB it cannot use, and can be turned off', () => {
      expect(() => loadGeoLocator(path.join(dir, 'missing.mmdb'))).to.throw(GeoIpError, /cannot read/);
      const junk = write('junk.mmdb', Buffer.from('this is not a database'));
      expect(() => loadGeoLocator(junk)).to.throw(GeoIpError, /not a MaxMind DB/);
      const gz = write('city.mmdb.gz', Buffer.from([0x1f, 0x8b, 8, 0, 0, 0]));
      expect(() => loadGeoLocator(gz)).to.throw(GeoIpError, /gzip/);
      expect(loadGeoLocator('off').locate('193.0.6.139')).to.equal(null);
    });
  });
});
