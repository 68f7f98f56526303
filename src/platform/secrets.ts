// Keys: the AES-256-GCM key that encrypts integration secrets at rest
// (TRACKWAY_SECRET_KEY, or generated once into the data dir), and the JWT
// signing key (JWT_SECRET, or generated once into the database).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

export class Cipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the encryption key must be 32 bytes');
  }

  /** base64(iv | tag | ciphertext) */
  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64');
  }

  decrypt(sealed: string): string {
    const raw = Buffer.from(sealed, 'base64');
    const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
  }
}

function parseKey(value: string): Buffer {
  return /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
}

export function loadCipher(configured: string | undefined, dataDir: string): Cipher {
  if (configured) return new Cipher(parseKey(configured));
  const file = path.join(dataDir, 'secret.key');
  try {
    return new Cipher(parseKey(fs.readFileSync(file, 'utf8').trim()));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // another process made it first
  }
  return new Cipher(parseKey(fs.readFileSync(file, 'utf8').trim()));
}

export async function loadJwtSecret(configured: string | undefined, db: Database): Promise<Uint8Array> {
  if (configured) return new TextEncoder().encode(configured);
  const fresh = randomBytes(48).toString('base64url');
  await sql`INSERT INTO settings (key, value) VALUES ('jwt_secret', ${fresh}) ON CONFLICT (key) DO NOTHING`.execute(db);
  const row = await db.selectFrom('settings').select('value').where('key', '=', 'jwt_secret').executeTakeFirstOrThrow();
  return new TextEncoder().encode(row.value);
}
