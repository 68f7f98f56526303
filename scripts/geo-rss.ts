// Measures what loading the geo-IP data costs in resident memory, and the
// lookup rate: `node --expose-gc --import tsx scripts/geo-rss.ts [GEOIP_DB]`.
import { loadGeoLocator } from '../src/tracking/geo.ts';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;
gc();
const before = process.memoryUsage().rss;
const t0 = performance.now();
const geo = loadGeoLocator(process.argv[2]);
const loadMs = performance.now() - t0;
gc();
const loaded = process.memoryUsage().rss;

const ips: string[] = [];
for (let i = 0; i < 200_000; i++) {
  ips.push(i % 3 ? `${1 + ((i * 7919) % 222)}.${i % 256}.${(i * 31) % 256}.${i % 251}` : `2a0${i % 10}:${((i * 7919) % 65536).toString(16)}::${(i % 999).toString(16)}`);
}
let found = 0;
const t1 = performance.now();
for (const ip of ips) if (geo.locate(ip)) found++;
const lookupUs = ((performance.now() - t1) * 1000) / ips.length;
gc();
const after = process.memoryUsage().rss;
const heap = process.memoryUsage();

console.log(`load: ${loadMs.toFixed(0)} ms; RSS ${mb(before)} → ${mb(loaded)} (+${mb(loaded - before)})`);
console.log(`${ips.length} lookups of spread addresses: ${lookupUs.toFixed(2)} µs each, ${found} located; RSS after: ${mb(after)} (+${mb(after - before)} over the start; V8 heap ${mb(heap.heapUsed)} used of ${mb(heap.heapTotal)})`);
