// Password hashing: scrypt from node:crypto with a per-user salt, stored as
// `scrypt$N$r$p$salt$hash`; verification reads the parameters from the stored
// hash and compares in constant time.
//
// Cost: N = 2^cost with r = 8, p = 1 (config.passwordHashCost,
// PASSWORD_HASH_COST, 17 by default: the current guidance for scrypt). One
// hash then needs 128·N·r = 128 MiB of memory and about half a second of one
// core. So:
// - at most MAX_RUNNING hashes run at once in a process (256 MiB), which also
//   leaves libuv's other threads to DNS lookups and file reads; up to
//   MAX_WAITING more wait their turn, and beyond that a hash is refused with
//   PasswordHashBusy (the caller answers 503 + Retry-After) rather than
//   queueing without bound;
// - a hash made with a smaller N (older ones: 2^14) is re-made with the
//   current cost at the next successful login (needsRehash);
// - an unknown email is verified against a dummy hash of the current cost, so
//   it takes as long as a wrong password (no timing difference reveals which
//   emails exist).
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { DEFAULT_PASSWORD_HASH_COST } from '../config.ts';

const R = 8;
const P = 1;
const KEYLEN = 32;
/** largest parameters accepted from a stored hash (a corrupt row must not ask for gigabytes) */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;

export const MAX_RUNNING = 2;
export const MAX_WAITING = 64;

/** Too many password hashes are waiting already: retry shortly. */
export class PasswordHashBusy extends Error {
  constructor() {
    super('too many password checks at once');
  }
}

let running = 0;
const waiting: (() => void)[] = [];

/** Runs `fn` when one of the MAX_RUNNING slots is free. */
async function inSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_RUNNING) {
    if (waiting.length >= MAX_WAITING) throw new PasswordHashBusy();
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else running++;
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next)
      next(); // the slot passes on
    else running--;
  }
}

/** How many hashes run and wait right now (for tests and metrics). */
export function hashingLoad(): { running: number; waiting: number } {
  return { running, waiting: waiting.length };
}

function scrypt(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  // node refuses more than maxmem (32 MiB by default); scrypt needs 128·N·r plus a little
  const maxmem = 128 * opts.N! * opts.r! * (opts.p ?? 1) + 16 * 1024 * 1024;
  return inSlot(
    () => new Promise((resolve, reject) => scryptCb(password, salt, keylen, { ...opts, maxmem }, (err, key) => (err ? reject(err) : resolve(key)))),
  );
}

interface Parsed {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parse(stored: string | null | undefined): Parsed | undefined {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const powerOfTwo = Number.isInteger(n) && n >= 2 && n <= MAX_N && (n & (n - 1)) === 0;
  if (!powerOfTwo || !Number.isInteger(r) || r < 1 || r > MAX_R || !Number.isInteger(p) || p < 1 || p > MAX_P) return undefined;
  const hash = Buffer.from(parts[5]!, 'base64');
  if (hash.length < 16 || hash.length > 64) return undefined;
  return { n, r, p, salt: Buffer.from(parts[4]!, 'base64'), hash };
}

/** `scrypt$N$r$p$salt$hash` (salt and hash in base64), N = 2^cost. */
export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_HASH_COST): Promise<string> {
  const N = 2 ** cost;
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

// Verifying against one of these when the account does not exist (or has no
// usable hash) costs what a real verification costs.
const dummies = new Map<number, Parsed>();
function dummy(cost: number): Parsed {
  let d = dummies.get(cost);
  if (!d) dummies.set(cost, (d = { n: 2 ** cost, r: R, p: P, salt: randomBytes(16), hash: randomBytes(KEYLEN) }));
  return d;
}

/** The dummy an unknown email is verified against, in the stored form (for tests: it has the configured cost). */
export function dummyHash(cost = DEFAULT_PASSWORD_HASH_COST): string {
  const d = dummy(cost);
  return `scrypt$${d.n}$${d.r}$${d.p}$${d.salt.toString('base64')}$${d.hash.toString('base64')}`;
}

/**
 * Whether `password` matches `stored`. A missing or unusable stored hash is
 * checked against a dummy of `cost` (the configured one) and is never a match.
 */
export async function verifyPassword(password: string, stored: string | null | undefined, cost = DEFAULT_PASSWORD_HASH_COST): Promise<boolean> {
  const parsed = parse(stored);
  const h = parsed ?? dummy(cost);
  const key = await scrypt(password, h.salt, h.hash.length, { N: h.n, r: h.r, p: h.p });
  return timingSafeEqual(key, h.hash) && parsed !== undefined;
}

/** Whether a stored hash is weaker than the configured cost (made with a smaller N, or other r/p). */
export function needsRehash(stored: string | null | undefined, cost = DEFAULT_PASSWORD_HASH_COST): boolean {
  const parsed = parse(stored);
  return parsed !== undefined && (parsed.n < 2 ** cost || parsed.r !== R || parsed.p !== P);
}
