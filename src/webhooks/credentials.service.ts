// An integration's secrets in clear, decrypted once per version of the
// integration (id + modified_at) and kept in a small bounded cache.
import { keepWithin } from '../recent-cache.ts';
import type { Cipher } from '../platform/secrets.service.ts';
import { type Credentials, signingKey } from './signing.crypto.ts';

export interface SealedCredentials {
  integrationId: number;
  modifiedAt: Date;
  authTokenEnc: string | null;
  signingSecretEnc: string;
}

export interface CredentialCache {
  get(sealed: SealedCredentials): Credentials;
}

export function createCredentialCache(cipher: Cipher, max = 10_000): CredentialCache {
  const entries = new Map<number, { version: number; creds: Credentials }>();
  return {
    get(s) {
      const version = s.modifiedAt.getTime();
      const hit = entries.get(s.integrationId);
      if (hit && hit.version === version) return hit.creds;
      const creds: Credentials = {
        authToken: s.authTokenEnc ? cipher.decrypt(s.authTokenEnc) : null,
        key: signingKey(cipher.decrypt(s.signingSecretEnc)),
      };
      entries.delete(s.integrationId);
      entries.set(s.integrationId, { version, creds });
      keepWithin(entries, max);
      return creds;
    },
  };
}
