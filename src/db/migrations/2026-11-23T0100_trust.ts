// Trust (docs/design.md "Trust"): per-organisation settings and
// identity verification.
// - organisations.allowed_domains: host names product and cart URLs (and,
//   with enforce_origin, tracking requests) may come from; NULL means the
//   default, the organisation's own domain (domain_key) and its subdomains.
// - organisations.enforce_origin, organisations.identity_verification.
// - organisations.identity_secret_enc: the key of identify `hash`es, sealed
//   with the server's cipher (src/platform/secrets.service.ts). New organisations get
//   one at registration; older ones (NULL here) get one on first need.
// - visitor_contacts.verified: the link was made (or later confirmed) by an
//   identify carrying a valid hash.
// Defaults keep every existing organisation's behaviour unchanged apart from
// the URL policy, which is on for everyone.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE organisations
      ADD COLUMN identity_verification text NOT NULL DEFAULT 'optional'
        CHECK (identity_verification IN ('optional', 'required')),
      ADD COLUMN allowed_domains text[],
      ADD COLUMN enforce_origin boolean NOT NULL DEFAULT false,
      ADD COLUMN identity_secret_enc text;

    ALTER TABLE visitor_contacts ADD COLUMN verified boolean NOT NULL DEFAULT false;
  `.execute(db);
}
