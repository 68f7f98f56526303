// Password hashing: scrypt from node:crypto with a per-user salt; verification
// compares in constant time.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const N = 16384;
const r = 8;
const p = 1;
const KEYLEN = 32;

function scrypt(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N, r, p });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

// Verifying against this when the account does not exist keeps a failed login
// as slow as a wrong password, so response time does not reveal which emails exist.
const DUMMY = `scrypt$${N}$${r}$${p}$${randomBytes(16).toString('base64')}$${randomBytes(KEYLEN).toString('base64')}`;

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parts = (stored ?? DUMMY).split('$');
  const valid = parts.length === 6 && parts[0] === 'scrypt';
  const [, n, rr, pp, salt, hash] = valid ? parts : DUMMY.split('$');
  const expected = Buffer.from(hash!, 'base64');
  const key = await scrypt(password, Buffer.from(salt!, 'base64'), expected.length, {
    N: Number(n),
    r: Number(rr),
    p: Number(pp),
  });
  return timingSafeEqual(key, expected) && stored != null && valid;
}
