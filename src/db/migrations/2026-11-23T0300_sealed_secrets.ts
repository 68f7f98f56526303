// Issue 12 (trust): organisation tokens encrypted at rest and revocable
// bearer tokens.
// - organisations.token_enc: the token sealed with the secret key (the same
//   AES-256-GCM key as integration secrets). A migration cannot see that key,
//   so the clear `token` becomes nullable here, and an idempotent step at
//   start (src/platform/sealing.service.ts) seals the rows still in clear and
//   clears `token`; the JWT key in `settings` is sealed by the same step.
//   Lookups keep using `token_hash`.
// - users.session_version: carried in bearer tokens (claim `sv`); a password
//   change increments it, which revokes every token issued before.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE organisations ADD COLUMN token_enc text;
    ALTER TABLE organisations ALTER COLUMN token DROP NOT NULL;
    ALTER TABLE organisations ADD CONSTRAINT organisations_token_present CHECK (token IS NOT NULL OR token_enc IS NOT NULL);
    ALTER TABLE users ADD COLUMN session_version integer NOT NULL DEFAULT 0;
  `.execute(db);
}
