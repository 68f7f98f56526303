// Keys: the AES-256-GCM key that encrypts secrets at rest (integration
// secrets, organisation tokens, the JWT key; TRACKWAY_SECRET_KEY, or
// generated once into the data dir), and the JWT signing key (JWT_SECRET, or
// generated once into the database, sealed with the first key).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Database } from '../db/database.ts';
import { getSetting, insertSettingIfAbsent } from './settings.repository.ts';

/** The settings key of the sealed JWT key (`jwt_secret` held it in clear in older versions). */
export const JWT_KEY_SETTING = 'jwt_secret_enc';
export const CLEAR_JWT_KEY_SETTING = 'jwt_secret';

/** A secret in the database does not decrypt with this key: TRACKWAY_SECRET_KEY (or the data dir's key) is not the one it was sealed with. */
export class SecretKeyMismatch extends Error {}

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

  /**
   * A key for another purpose (`purpose` names it), derived from this one
   * with HKDF-SHA256: keyed hashes never use the encryption key itself, and
   * keys for different purposes are independent.
   */
  deriveKey(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), purpose, 32));
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

/**
 * The key if there is one (TRACKWAY_SECRET_KEY, or the data dir's), without
 * making one: the CLI must never seal secrets with a key the servers do not
 * have (a `migrate` job on another host, say).
 */
export function existingCipher(configured: string | undefined, dataDir: string): Cipher | undefined {
  if (configured) return new Cipher(parseKey(configured));
  try {
    return new Cipher(parseKey(fs.readFileSync(path.join(dataDir, 'secret.key'), 'utf8').trim()));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
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

/**
 * JWT_SECRET, or the key kept in the database, sealed with `cipher` (made on
 * the first start; sealSecretsAtRest has already sealed a key an older
 * version kept in clear).
 */
export async function loadJwtSecret(configured: string | undefined, db: Database, cipher: Cipher): Promise<Uint8Array> {
  if (configured) return new TextEncoder().encode(configured);
  let sealed = await getSetting(db, JWT_KEY_SETTING);
  if (sealed === undefined) {
    await insertSettingIfAbsent(db, JWT_KEY_SETTING, cipher.encrypt(randomBytes(48).toString('base64url')));
    sealed = (await getSetting(db, JWT_KEY_SETTING))!;
  }
  return new TextEncoder().encode(openSealed(cipher, sealed, 'the JWT signing key'));
}

/** Decrypts a secret of the database, or says clearly that the key is not the one it was sealed with. */
export function openSealed(cipher: Cipher, sealed: string, what: string): string {
  try {
    return cipher.decrypt(sealed);
  } catch {
    throw new SecretKeyMismatch(
      `${what} in the database cannot be decrypted: TRACKWAY_SECRET_KEY (or the data dir's secret.key) is not the key it was sealed with`,
    );
  }
}
