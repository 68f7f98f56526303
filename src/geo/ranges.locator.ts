// Looks addresses up in a geo ranges file (built by ranges-file.build.ts)
// without loading it: the process keeps only the sparse index (the first
// address of every 64th range, ~1 MB for the default data) and reads the
// one block of ranges and the one record an answer needs with pread. The
// file's pages live in the kernel's page cache, shared by every process
// (each cluster worker) that reads it, instead of ~123 MB of mmdb in each.
import fs from 'node:fs';
import type { Location } from '../db/schema.ts';
import { v4Number, v6Groups } from './address.rules.ts';
import { NO_LOCATION, RANGES_MAGIC, type RangesHeader } from './ranges-file.build.ts';

/** records are short (a city, a region, a zone): one read of this size almost always holds one */
const RECORD_READ = 512;

interface Table {
  offset: number;
  count: number;
  /** 32-bit words per address: 1 (IPv4) or 4 (IPv6) */
  words: number;
  /** the first address of every block-th entry, `words` words each */
  index: Uint32Array;
}

export class RangesLocator {
  private readonly fd: number;
  private readonly header: RangesHeader;
  private readonly v4: Table;
  private readonly v6: Table;
  private readonly block: Buffer;
  private record = Buffer.alloc(RECORD_READ);
  private readonly key = new Uint32Array(4);

  /** Opens a ranges file; throws when it is not one (or is truncated). */
  constructor(readonly file: string) {
    this.fd = fs.openSync(file, 'r');
    try {
      const head = Buffer.alloc(RANGES_MAGIC.length + 4);
      this.read(head, head.length, 0);
      if (!head.subarray(0, RANGES_MAGIC.length).equals(RANGES_MAGIC)) throw new Error(`${file} is not a geo ranges file`);
      const json = Buffer.alloc(head.readUInt32BE(RANGES_MAGIC.length));
      this.read(json, json.length, head.length);
      this.header = JSON.parse(json.toString('utf8')) as RangesHeader;
      const size = fs.fstatSync(this.fd).size;
      const { v4, v6, records, block } = this.header;
      if (records.offset + records.length !== size) throw new Error(`${file} is truncated`);
      this.v4 = { offset: v4.offset, count: v4.count, words: 1, index: this.loadIndex(v4.index, v4.count, 1) };
      this.v6 = { offset: v6.offset, count: v6.count, words: 4, index: this.loadIndex(v6.index, v6.count, 4) };
      this.block = Buffer.alloc(block * 20);
    } catch (err) {
      fs.closeSync(this.fd);
      throw err;
    }
  }

  /** the mmdb files it was built from */
  get sources(): RangesHeader['sources'] {
    return this.header.sources;
  }

  /** The location of a public address (as publicAddress gives it), or null. */
  lookup([ip, version]: [string, 4 | 6]): Location | null {
    const key = this.key;
    let table: Table;
    if (version === 4) {
      key[0] = v4Number(ip);
      table = this.v4;
    } else {
      const g = v6Groups(ip);
      if (!g) return null;
      for (let k = 0; k < 4; k++) key[k] = ((g[2 * k]! << 16) | g[2 * k + 1]!) >>> 0;
      table = this.v6;
    }
    const rec = this.find(table, key);
    return rec === NO_LOCATION ? null : this.readRecord(rec);
  }

  /** How many ranges the file holds for a family. */
  count(version: 4 | 6): number {
    return (version === 4 ? this.v4 : this.v6).count;
  }

  /** The first address of range i (to test the edges of every range). */
  rangeStart(version: 4 | 6, i: number): string {
    const t = version === 4 ? this.v4 : this.v6;
    const size = 4 * t.words + 4;
    const buf = Buffer.alloc(size);
    this.read(buf, size, t.offset + i * size);
    if (version === 4) return [0, 1, 2, 3].map((k) => buf[k]).join('.');
    return Array.from({ length: 8 }, (_, k) => buf.readUInt16BE(2 * k).toString(16)).join(':');
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  private read(buf: Buffer, length: number, position: number): void {
    let done = 0;
    while (done < length) {
      const n = fs.readSync(this.fd, buf, done, length - done, position + done);
      if (n === 0) throw new Error(`${this.file} is truncated`);
      done += n;
    }
  }

  private loadIndex(offset: number, count: number, words: number): Uint32Array {
    const entries = Math.ceil(count / this.header.block);
    const buf = Buffer.alloc(entries * words * 4);
    this.read(buf, buf.length, offset);
    const index = new Uint32Array(entries * words);
    for (let i = 0; i < index.length; i++) index[i] = buf.readUInt32BE(i * 4);
    return index;
  }

  /** The record offset of the last range starting at or before `key`. */
  private find(t: Table, key: Uint32Array): number {
    const w = t.words;
    // the last block starting at or before the key (the first starts at 0)
    let lo = 0;
    let hi = t.index.length / w - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (compare(t.index, mid * w, key, w) <= 0) lo = mid;
      else hi = mid - 1;
    }
    const first = lo * this.header.block;
    const n = Math.min(this.header.block, t.count - first);
    const size = 4 * w + 4;
    this.read(this.block, n * size, t.offset + first * size);
    let a = 0;
    let b = n - 1;
    while (a < b) {
      const mid = (a + b + 1) >>> 1;
      if (compareBuf(this.block, mid * size, key, w) <= 0) a = mid;
      else b = mid - 1;
    }
    return this.block.readUInt32BE(a * size + 4 * w);
  }

  private readRecord(offset: number): Location {
    const { records } = this.header;
    const at = records.offset + offset;
    const avail = Math.min(this.record.length, records.offset + records.length - at);
    this.read(this.record, avail, at);
    const len = this.record.readUInt16BE(0);
    if (len + 2 > avail) {
      if (len + 2 > this.record.length) this.record = Buffer.alloc(len + 2);
      this.read(this.record, len + 2, at);
    }
    const [country_code, region, city, latitude, longitude, timezone] = JSON.parse(this.record.toString('utf8', 2, 2 + len)) as [
      string | null,
      string | null,
      string | null,
      number | null,
      number | null,
      string | null,
    ];
    return { country_code, region, city, latitude, longitude, timezone };
  }
}

function compare(a: Uint32Array, at: number, key: Uint32Array, w: number): number {
  for (let k = 0; k < w; k++) {
    const x = a[at + k]!;
    const y = key[k]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

function compareBuf(buf: Buffer, at: number, key: Uint32Array, w: number): number {
  for (let k = 0; k < w; k++) {
    const x = buf.readUInt32BE(at + 4 * k);
    const y = key[k]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
