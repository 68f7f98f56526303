// Secrets at rest: what older versions kept in clear in the
// database is sealed with the secret key (deps.cipher, the same AES-256-GCM
// key as integration secrets) and the clear copy removed. Migrations cannot
// see that key, so this runs at every start after migrating (serve, dispatch
// and the CLI); it is idempotent and safe when several processes start at
// once (each statement only touches what is still in clear).
// - settings `jwt_secret` (the JWT key in clear) → `jwt_secret_enc`;
// - organisations.token → organisations.token_enc (lookups keep using
//   token_hash).
import type { Database } from '../db/database.ts';
import type { Logger } from '../log.ts';
import { organisationsWithClearToken, sealOrganisationTokens } from './organisations.repository.ts';
import { CLEAR_JWT_KEY_SETTING, type Cipher, JWT_KEY_SETTING } from './secrets.service.ts';
import { deleteSetting, getSetting, insertSettingIfAbsent } from './settings.repository.ts';

const BATCH = 500;

export interface Sealed {
  jwtKey: boolean;
  organisationTokens: number;
}

export async function sealSecretsAtRest(db: Database, cipher: Cipher, log?: Logger): Promise<Sealed> {
  const sealed: Sealed = { jwtKey: false, organisationTokens: 0 };
  const clearKey = await getSetting(db, CLEAR_JWT_KEY_SETTING);
  if (clearKey !== undefined) {
    // a sealed key made meanwhile (another process) wins: both are the same key anyway
    await insertSettingIfAbsent(db, JWT_KEY_SETTING, cipher.encrypt(clearKey));
    sealed.jwtKey = await deleteSetting(db, CLEAR_JWT_KEY_SETTING);
  }
  for (;;) {
    const rows = await organisationsWithClearToken(db, BATCH);
    if (rows.length === 0) break;
    sealed.organisationTokens += await sealOrganisationTokens(
      db,
      rows.map((r) => ({ id: r.id, tokenEnc: cipher.encrypt(r.token) })),
    );
    if (rows.length < BATCH) break;
  }
  if (sealed.jwtKey || sealed.organisationTokens > 0) {
    log?.info(sealed, 'sealed secrets that were stored in clear');
  }
  return sealed;
}
