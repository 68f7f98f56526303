// A tiny MaxMind DB (mmdb) writer for tests, after the public MaxMind DB
// format spec (version 2.0): a binary search tree over the address bits, 16
// zero bytes, a data section of typed values, then "\xAB\xCD\xEFMaxMind.com"
// and the metadata map. Enough to build small GeoIP2-City-like and
// ip-location-db-like files; not a general-purpose writer (networks must not
// overlap, no pointers in the data section).

/** A value with an explicit mmdb type; plain numbers are written as uint32 (integers) or double. */
export class Typed {
  constructor(
    readonly type: 'uint16' | 'uint32' | 'uint64' | 'double' | 'float',
    readonly value: number | bigint,
  ) {}
}
export const u16 = (n: number) => new Typed('uint16', n);
export const u32 = (n: number) => new Typed('uint32', n);
export const u64 = (n: number | bigint) => new Typed('uint64', n);
export const double = (n: number) => new Typed('double', n);

export type MmdbValue = string | number | boolean | Typed | MmdbValue[] | { [key: string]: MmdbValue };

export interface MmdbNetwork {
  /** CIDR, e.g. `81.2.69.0/24` or `2001:db8::/32` (IPv4 networks go under ::/96 in an IPv6 tree) */
  network: string;
  data: MmdbValue;
}

export interface MmdbOptions {
  ipVersion: 4 | 6;
  databaseType: string;
  languages?: string[];
  description?: Record<string, string>;
  recordSize?: 24 | 28 | 32;
  networks: MmdbNetwork[];
}

// type numbers of the data section (1-7 in the control byte, 8+ as "extended")
const T = { pointer: 1, string: 2, double: 3, bytes: 4, uint16: 5, uint32: 6, map: 7, int32: 8, uint64: 9, array: 11, boolean: 14, float: 15 };

function control(type: number, size: number): Buffer {
  const head: number[] = [];
  const extra: number[] = [];
  let bits: number;
  if (size < 29) bits = size;
  else if (size < 29 + 256) [bits, extra[0]] = [29, size - 29];
  else if (size < 285 + 65536) [bits, extra[0], extra[1]] = [30, (size - 285) >> 8, (size - 285) & 255];
  else {
    const s = size - 65821;
    [bits, extra[0], extra[1], extra[2]] = [31, (s >> 16) & 255, (s >> 8) & 255, s & 255];
  }
  if (type <= 7) head.push((type << 5) | bits);
  else head.push(bits, type - 7);
  return Buffer.from([...head, ...extra]);
}

function unsigned(type: number, value: number | bigint): Buffer {
  let v = BigInt(value);
  const bytes: number[] = [];
  while (v > 0n) {
    bytes.unshift(Number(v & 255n));
    v >>= 8n;
  }
  return Buffer.concat([control(type, bytes.length), Buffer.from(bytes)]);
}

export function encode(value: MmdbValue): Buffer {
  if (typeof value === 'string') {
    const b = Buffer.from(value, 'utf8');
    return Buffer.concat([control(T.string, b.length), b]);
  }
  if (typeof value === 'boolean') return control(T.boolean, value ? 1 : 0);
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0 && value < 2 ** 32 ? unsigned(T.uint32, value) : encode(double(value));
  }
  if (value instanceof Typed) {
    if (value.type === 'double') {
      const b = Buffer.alloc(8);
      b.writeDoubleBE(Number(value.value));
      return Buffer.concat([control(T.double, 8), b]);
    }
    if (value.type === 'float') {
      const b = Buffer.alloc(4);
      b.writeFloatBE(Number(value.value));
      return Buffer.concat([control(T.float, 4), b]);
    }
    return unsigned(T[value.type], value.value);
  }
  if (Array.isArray(value)) return Buffer.concat([control(T.array, value.length), ...value.map(encode)]);
  const entries = Object.entries(value);
  return Buffer.concat([control(T.map, entries.length), ...entries.flatMap(([k, v]) => [encode(k), encode(v)])]);
}

/** The address bits of a CIDR, IPv4 networks mapped into ::/96 of an IPv6 tree. */
function networkBits(cidr: string, ipVersion: 4 | 6): number[] {
  const [addr, len] = cidr.split('/') as [string, string];
  const prefix = Number(len);
  let bytes: number[];
  if (addr.includes('.')) {
    bytes = addr.split('.').map(Number);
    if (ipVersion === 6) bytes = [...new Array<number>(12).fill(0), ...bytes];
  } else {
    if (ipVersion === 4) throw new Error(`${cidr}: an IPv6 network in an IPv4 tree`);
    const [l, r] = addr.split('::') as [string, string | undefined];
    const left = l ? l.split(':') : [];
    const right = r ? r.split(':') : [];
    const groups = [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right].map((g) => parseInt(g, 16));
    bytes = groups.flatMap((g) => [g >> 8, g & 255]);
  }
  const offset = addr.includes('.') && ipVersion === 6 ? 96 : 0;
  const bits: number[] = [];
  for (let i = 0; i < offset + prefix; i++) bits.push((bytes[i >> 3]! >> (7 - (i & 7))) & 1);
  return bits;
}

type Rec = { node: number } | { data: number } | null;

export function writeMmdb(opts: MmdbOptions): Buffer {
  const recordSize = opts.recordSize ?? 24;
  // the data section, one entry per distinct value
  const chunks: Buffer[] = [];
  const offsets = new Map<string, number>();
  let dataSize = 0;
  const nodes: [Rec, Rec][] = [[null, null]];
  for (const { network, data } of opts.networks) {
    const key = JSON.stringify(data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    let offset = offsets.get(key);
    if (offset === undefined) {
      const b = encode(data);
      offsets.set(key, (offset = dataSize));
      chunks.push(b);
      dataSize += b.length;
    }
    const bits = networkBits(network, opts.ipVersion);
    let node = 0;
    for (let i = 0; i < bits.length - 1; i++) {
      const rec = nodes[node]![bits[i]!];
      if (rec && 'data' in rec) throw new Error(`${network} overlaps another network`);
      if (!rec) {
        nodes.push([null, null]);
        nodes[node]![bits[i]!] = { node: nodes.length - 1 };
      }
      node = (nodes[node]![bits[i]!] as { node: number }).node;
    }
    nodes[node]![bits[bits.length - 1]!] = { data: offset };
  }
  const count = nodes.length;
  const value = (r: Rec) => (r === null ? count : 'node' in r ? r.node : count + 16 + r.data);
  const nodeBytes = recordSize / 4;
  const tree = Buffer.alloc(count * nodeBytes);
  nodes.forEach(([l, r], i) => {
    const at = i * nodeBytes;
    const [left, right] = [value(l), value(r)];
    if (recordSize === 24) {
      tree.writeUIntBE(left, at, 3);
      tree.writeUIntBE(right, at + 3, 3);
    } else if (recordSize === 28) {
      tree.writeUIntBE(left & 0xffffff, at, 3);
      tree[at + 3] = ((left >>> 24) << 4) | (right >>> 24);
      tree.writeUIntBE(right & 0xffffff, at + 4, 3);
    } else {
      tree.writeUInt32BE(left, at);
      tree.writeUInt32BE(right, at + 4);
    }
  });
  const metadata = encode({
    binary_format_major_version: u16(2),
    binary_format_minor_version: u16(0),
    build_epoch: u64(Math.floor(Date.now() / 1000)),
    database_type: opts.databaseType,
    description: opts.description ?? { en: `${opts.databaseType} test data` },
    ip_version: u16(opts.ipVersion),
    languages: opts.languages ?? ['en'],
    node_count: u32(count),
    record_size: u16(recordSize),
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...chunks, Buffer.from('abcdef4d61784d696e642e636f6d', 'hex'), metadata]);
}
