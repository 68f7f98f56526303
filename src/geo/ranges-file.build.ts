// Builds the geo ranges file (read by ranges.locator.ts) from City mmdb files:
// every address range of the files' search trees, in address order, with
// the location the service would answer for it, for IPv4 and for IPv6.
// Ranges that answer the same are merged, and each distinct location is
// stored once. An IPv4 address is answered by the first file that locates it
// (IPv4 files first, then the ::/96 part of IPv6 files) and an IPv6 address
// by the first IPv6 file that does, exactly as the maxmind reader answered
// (mmdb.locator.ts MmdbLocator; a test compares the two).
//
// Layout (big-endian): the magic `TWGEO\0\0\x01`, a u32 length and a JSON
// header (where each section is), then the sections: the IPv4 table (u32
// first address, u32 record offset), the IPv6 table (16-byte first address,
// u32 record offset), the sparse index of each (the first address of every
// BLOCK-th entry), and the records (u16 length, JSON array
// [country_code, region, city, latitude, longitude, timezone]). A record
// offset of 0xffffffff means no location.
import fs from 'node:fs';
import path from 'node:path';
import type { Location } from '../db/schema.ts';
import { type Source, openSource, recordLocation } from './mmdb.locator.ts';

export const RANGES_MAGIC = Buffer.from('TWGEO\0\0\x01', 'latin1');
/** table entries per sparse-index entry */
export const BLOCK = 64;
export const NO_LOCATION = 0xffffffff;

export interface RangesHeader {
  format: 1;
  block: number;
  v4: { offset: number; count: number; index: number };
  v6: { offset: number; count: number; index: number };
  records: { offset: number; length: number };
  sources: { file: string; size: number; mtime_ms: number }[];
}

/**
 * Ranges tiling an address space from 0, in address order: entry i is
 * `words` 32-bit words of its first address then its value (a location
 * index, MISS or STOP).
 */
class Ranges {
  data: Uint32Array;
  count = 0;
  constructor(readonly words: number) {
    this.data = new Uint32Array(1024 * (words + 1));
  }
  push(at: ArrayLike<number>, value: number): void {
    const w = this.words;
    if (this.count > 0 && this.data[this.count * (w + 1) - 1] === value) return;
    if ((this.count + 1) * (w + 1) > this.data.length) {
      const grown = new Uint32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    const o = this.count * (w + 1);
    for (let k = 0; k < w; k++) this.data[o + k] = at[k]!;
    this.data[o + w] = value;
    this.count++;
  }
  value(i: number): number {
    return this.data[i * (this.words + 1) + this.words]!;
  }
  /** the first address of entry i compared with entry j of `other` */
  compare(i: number, other: Ranges, j: number): number {
    const w = this.words;
    for (let k = 0; k < w; k++) {
      const a = this.data[i * (w + 1) + k]!;
      const b = other.data[j * (w + 1) + k]!;
      if (a !== b) return a < b ? -1 : 1;
    }
    return 0;
  }
  start(i: number): Uint32Array {
    return this.data.subarray(i * (this.words + 1), i * (this.words + 1) + this.words);
  }
}

/** no data for the address: the next file is asked */
const MISS = 0xffffffff;
/** the reader throws on the record: the maxmind lookup gave up (no location, no other file asked) */
const STOP = 0xfffffffe;

interface Tree {
  metadata: { nodeCount: number; nodeByteSize: number };
  walker: { left(offset: number): number; right(offset: number): number };
  ipv4StartNodeNumber: number;
  resolveDataPointer(pointer: number): unknown;
}

/** Distinct locations, each with its index. */
class Locations {
  readonly list: Location[] = [];
  private readonly byKey = new Map<string, number>();
  indexOf(loc: Location): number {
    const key = JSON.stringify(encode(loc));
    let i = this.byKey.get(key);
    if (i === undefined) {
      i = this.list.length;
      this.list.push(loc);
      this.byKey.set(key, i);
    }
    return i;
  }
}

export function encode(l: Location): unknown[] {
  return [l.country_code, l.region, l.city, l.latitude, l.longitude, l.timezone];
}

/** Every range under `start` (a record value) of a source's tree, `bits` (32 or 128) deep, merged where equal. */
function walk(source: Source, start: number, bits: number, locations: Locations): Ranges {
  const tree = source.reader as unknown as Tree;
  const { nodeCount, nodeByteSize } = tree.metadata;
  const { walker } = tree;
  const byPointer = new Map<number, number>();
  const valueOf = (pointer: number): number => {
    let v = byPointer.get(pointer);
    if (v === undefined) {
      try {
        const loc = recordLocation(source, tree.resolveDataPointer(pointer));
        v = loc ? locations.indexOf(loc) : MISS;
      } catch {
        v = STOP;
      }
      byPointer.set(pointer, v);
    }
    return v;
  };
  const out = new Ranges(bits / 32);
  const prefix = new Uint32Array(bits / 32);
  const visit = (record: number, depth: number): void => {
    if (record < nodeCount) {
      // a node at full depth leads nowhere (the reader answers null)
      if (depth === bits) return out.push(prefix, MISS);
      const offset = record * nodeByteSize;
      visit(walker.left(offset), depth + 1);
      const w = depth >>> 5;
      const bit = 1 << (31 - (depth & 31));
      prefix[w] = (prefix[w]! | bit) >>> 0;
      visit(walker.right(offset), depth + 1);
      prefix[w] = (prefix[w] & ~bit) >>> 0;
      return;
    }
    out.push(prefix, record === nodeCount ? MISS : valueOf(record));
  };
  visit(start, 0);
  return out;
}

/** `a` where it has an answer (a location or STOP), else `b`. */
function overlay(a: Ranges, b: Ranges): Ranges {
  const out = new Ranges(a.words);
  let i = 0;
  let j = 0;
  let at = a.start(0);
  for (;;) {
    const va = a.value(i);
    out.push(at, va !== MISS ? va : b.value(j));
    const moreA = i + 1 < a.count;
    const moreB = j + 1 < b.count;
    if (!moreA && !moreB) return out;
    const c = !moreB ? -1 : !moreA ? 1 : a.compare(i + 1, b, j + 1);
    if (c <= 0) {
      at = a.start(++i);
      if (c === 0) j++;
    } else at = b.start(++j);
  }
}

function nowhere(words: number): Ranges {
  const r = new Ranges(words);
  r.push(new Uint32Array(words), MISS);
  return r;
}

/** Builds the ranges of a set of mmdb files (in GEOIP_DB order) into `target`, atomically. */
export function buildRangesFile(files: string[], target: string): RangesHeader {
  const locations = new Locations();
  const sources: RangesHeader['sources'] = [];
  const walked: { version: number; v4: Ranges; v6?: Ranges }[] = [];
  // one mmdb file in memory at a time
  for (const f of files) {
    const st = fs.statSync(f);
    sources.push({ file: f, size: st.size, mtime_ms: Math.trunc(st.mtimeMs) });
    const source = openSource(f);
    if (source.ipVersion === 4) walked.push({ version: 4, v4: walk(source, 0, 32, locations) });
    else {
      const v4 = walk(source, (source.reader as unknown as Tree).ipv4StartNodeNumber, 32, locations);
      walked.push({ version: 6, v4, v6: walk(source, 0, 128, locations) });
    }
  }
  // an IPv4 address: IPv4 files first, then IPv6 files; an IPv6 address: IPv6 files
  const v4Chain = [...walked.filter((w) => w.version === 4), ...walked.filter((w) => w.version === 6)].map((w) => w.v4);
  const v6Chain = walked.flatMap((w) => (w.v6 ? [w.v6] : []));
  const v4 = v4Chain.reduceRight((acc, r) => overlay(r, acc), nowhere(1));
  const v6 = v6Chain.reduceRight((acc, r) => overlay(r, acc), nowhere(4));
  return writeRanges(target, v4, v6, locations.list, sources);
}

function writeRanges(target: string, v4: Ranges, v6: Ranges, locations: Location[], sources: RangesHeader['sources']): RangesHeader {
  const recordOffsets: number[] = [];
  let records = Buffer.alloc(1 << 20);
  let length = 0;
  for (const loc of locations) {
    const json = JSON.stringify(encode(loc));
    const max = 2 + Buffer.byteLength(json);
    if (max > 0xffff) throw new Error('a geo record is too long');
    if (length + max > records.length) {
      const grown = Buffer.alloc(Math.max(records.length * 2, length + max));
      records.copy(grown, 0, 0, length);
      records = grown;
    }
    recordOffsets.push(length);
    records.writeUInt16BE(max - 2, length);
    records.write(json, length + 2, 'utf8');
    length += max;
  }
  const rec = (v: number) => (v === MISS || v === STOP ? NO_LOCATION : recordOffsets[v]!);
  const table = (r: Ranges): [Buffer, Buffer] => {
    const w = r.words;
    const t = Buffer.alloc(r.count * (4 * w + 4));
    const index = Buffer.alloc(Math.ceil(r.count / BLOCK) * 4 * w);
    for (let i = 0; i < r.count; i++) {
      const o = i * (4 * w + 4);
      for (let k = 0; k < w; k++) {
        const word = r.data[i * (w + 1) + k]!;
        t.writeUInt32BE(word, o + 4 * k);
        if (i % BLOCK === 0) index.writeUInt32BE(word, (i / BLOCK) * 4 * w + 4 * k);
      }
      t.writeUInt32BE(rec(r.value(i)), o + 4 * w);
    }
    return [t, index];
  };
  const [t4, i4] = table(v4);
  const [t6, i6] = table(v6);
  // the header's offsets depend on its own length: lay it out with room for the digits
  const header: RangesHeader = {
    format: 1,
    block: BLOCK,
    v4: { offset: 0, count: v4.count, index: 0 },
    v6: { offset: 0, count: v6.count, index: 0 },
    records: { offset: 0, length },
    sources,
  };
  const headerRoom = Buffer.byteLength(JSON.stringify(header)) + 200;
  let at = RANGES_MAGIC.length + 4 + headerRoom;
  header.v4.offset = at;
  header.v4.index = at += t4.length;
  header.v6.offset = at += i4.length;
  header.v6.index = at += t6.length;
  header.records.offset = at += i6.length;
  const head = Buffer.alloc(4 + headerRoom, ' ');
  head.writeUInt32BE(headerRoom, 0);
  head.write(JSON.stringify(header), 4, 'utf8');
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o644);
  try {
    for (const b of [RANGES_MAGIC, head, t4, i4, t6, i6, records.subarray(0, length)]) fs.writeSync(fd, b);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, target);
  return header;
}
