// The trust settings of organisations (docs/design.md "Trust"): Kysely only.
// allowed_domains NULL means the default (the organisation's domain_key);
// identity_secret_enc is sealed by the caller with the server's Cipher.
import { type Transaction, sql } from 'kysely';
import type { DB } from '../db/schema.ts';
import { ALL_ORGANISATIONS } from '../db/database.ts';
import { ORGANISATIONS_CHANNEL } from '../db/notifications.ts';
import { type Executor, type OrgId } from '../db/tenancy.ts';

export interface PolicyRow {
  id: OrgId;
  is_active: boolean;
  domain_key: string;
  identity_verification: 'optional' | 'required';
  allowed_domains: string[] | null;
  enforce_origin: boolean;
  export_unverified: boolean;
  identity_secret_enc: string | null;
  honor_gpc: boolean;
  filter_bots: boolean;
}

/** What the tracking hot path needs of an organisation (read through a cache, src/platform/organisation-directory.service.ts). */
export function findPolicyRow(db: Executor, orgId: OrgId): Promise<PolicyRow | undefined> {
  return db
    .selectFrom('organisations')
    .select([
      'id',
      'is_active',
      'domain_key',
      'identity_verification',
      'allowed_domains',
      'enforce_origin',
      'export_unverified',
      'identity_secret_enc',
      'honor_gpc',
      'filter_bots',
    ])
    .where('id', '=', orgId)
    .executeTakeFirst();
}

export interface SettingsChange {
  identity_verification?: 'optional' | 'required';
  /** null: back to the default */
  allowed_domains?: string[] | null;
  enforce_origin?: boolean;
  export_unverified?: boolean;
  honor_gpc?: boolean;
  /** null: keep visitors */
  visitor_retention_days?: number | null;
  filter_bots?: boolean;
}

/** Applies the settings sent (at least one) and touches modified_at. */
export async function updateSettings(tx: Transaction<DB>, orgId: OrgId, change: SettingsChange): Promise<void> {
  await tx
    .updateTable('organisations')
    // node-postgres sends allowed_domains (a JS array) as a PostgreSQL text[]
    .set({ ...change, modified_at: sql<Date>`now()` })
    .where('id', '=', orgId)
    .execute();
}

/** Replaces the identity secret (rotation) and touches modified_at. */
export async function replaceIdentitySecret(tx: Transaction<DB>, orgId: OrgId, sealed: string): Promise<void> {
  await tx
    .updateTable('organisations')
    .set({ identity_secret_enc: sealed, modified_at: sql<Date>`now()` })
    .where('id', '=', orgId)
    .execute();
}

/**
 * Gives an organisation its first identity secret unless it has one (also
 * under a concurrent call): answers the secret it has now.
 */
export async function ensureIdentitySecret(db: Executor, orgId: OrgId, sealed: string): Promise<string | undefined> {
  const made = await db
    .updateTable('organisations')
    .set({ identity_secret_enc: sealed })
    .where('id', '=', orgId)
    .where('identity_secret_enc', 'is', null)
    .returning('identity_secret_enc')
    .executeTakeFirst();
  if (made?.identity_secret_enc) return made.identity_secret_enc;
  const row = await db.selectFrom('organisations').select('identity_secret_enc').where('id', '=', orgId).executeTakeFirst();
  return row?.identity_secret_enc ?? undefined;
}

export async function announceOrganisationChange(db: Executor, orgId: OrgId): Promise<void> {
  await sql`SELECT pg_notify(${ORGANISATIONS_CHANNEL}, ${String(orgId)})`.execute(db);
}

/** Organisations with a visitor retention (retention's one statement over every organisation). */
export async function organisationsWithRetention(db: Executor): Promise<{ id: OrgId; days: number }[]> {
  const { rows } = await sql<{ id: OrgId; days: number }>`${sql.raw(ALL_ORGANISATIONS)}
    SELECT id, visitor_retention_days AS days FROM organisations WHERE visitor_retention_days IS NOT NULL ORDER BY id
  `.execute(db);
  return rows;
}
