// Measures what loading the geo-IP data costs in resident memory, and the
// lookup rate: `node --expose-gc --import tsx scripts/geo-rss.ts [--mmdb] [GEOIP_DB]`.
// By default the service's locator (the ranges file, read with pread; the file
// is built first if missing, outside the measurement); with --mmdb the maxmind
// reader holding the mmdb files in memory, as before.
import { loadGeoLocator, loadMmdbReference, prepareGeoRanges } from '../src/geo/geo.service.ts';

const mmdb = process.argv.includes('--mmdb');
const spec = process.argv.slice(2).find((a) => !a.startsWith('--'));
if (!mmdb) prepareGeoRanges(spec);

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;
gc();
const before = process.memoryUsage().rss;
const t0 = performance.now();
const geo = mmdb ? loadMmdbReference(spec)! : loadGeoLocator(spec);
const loadMs = performance.now() - t0;
gc();
const loaded = process.memoryUsage().rss;

const ips: string[] = [];
for (let i = 0; i < 200_000; i++) {
  ips.push(
    i % 3
      ? `${1 + ((i * 7919) % 222)}.${i % 256}.${(i * 31) % 256}.${i % 251}`
      : `2a0${i % 10}:${((i * 7919) % 65536).toString(16)}::${(i % 999).toString(16)}`,
  );
}
let found = 0;
const t1 = performance.now();
for (const ip of ips) if (geo.locate(ip)) found++;
const lookupUs = ((performance.now() - t1) * 1000) / ips.length;
gc();
const after = process.memoryUsage().rss;
const heap = process.memoryUsage();

console.log(
  `${mmdb ? 'maxmind reader (mmdb in memory)' : 'ranges file (pread)'}: load ${loadMs.toFixed(0)} ms; RSS ${mb(before)} → ${mb(loaded)} (+${mb(loaded - before)})`,
);
console.log(
  `${ips.length} lookups of spread addresses: ${lookupUs.toFixed(2)} µs each, ${found} located; RSS after: ${mb(after)} (+${mb(after - before)} over the start; V8 heap ${mb(heap.heapUsed)} used of ${mb(heap.heapTotal)})`,
);
