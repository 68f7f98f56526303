// organisations and organisation_members: Kysely only. Timestamps are
// formatted by PostgreSQL in the interface's `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`.
import { type Selectable, type Transaction, sql } from 'kysely';
import type { DB, OrganisationsTable } from '../db/schema.ts';
import { asOrgId, type Executor, memberOrganisations, orgScoped, type OrgId } from '../db/tenancy.ts';

const micro = (column: 'organisations.created_at' | 'organisations.modified_at') =>
  sql<string>`to_char(${sql.ref(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')`;

/** The columns of an `Organisation` (the contract's `Organisation`), plus `organisation_name`, the trust and the privacy settings. */
const ORGANISATION_COLUMNS = [
  'organisations.id',
  'organisations.token',
  'organisations.token_enc',
  'organisations.name',
  'organisations.domain',
  'organisations.currency',
  'organisations.country_code',
  'organisations.is_active',
  'organisations.logo',
  'organisations.wid',
  'organisations.referer',
  'organisations.features_enabled',
  'organisations.organisation_name',
  'organisations.domain_key',
  'organisations.identity_verification',
  'organisations.allowed_domains',
  'organisations.enforce_origin',
  'organisations.export_unverified',
  'organisations.identity_secret_enc',
  'organisations.honor_gpc',
  'organisations.visitor_retention_days',
  'organisations.filter_bots',
] as const;

/** An organisation as read here: its columns (the token in clear only in rows not yet sealed, see organisationToken), timestamps as microsecond ISO text. */
export type OrganisationRow = Omit<Selectable<OrganisationsTable>, 'token_hash' | 'created_by' | 'created_at' | 'modified_at'> & {
  created_at: string;
  modified_at: string;
};

export interface NewOrganisation {
  /** the token sealed with the secret key */
  tokenEnc: string;
  tokenHash: Buffer;
  domain: string;
  domainKey: string;
  organisationName: string;
  createdBy: number | null;
  /** sealed identity secret (organisation-settings.service.ts); left out, it is made on first need */
  identitySecretEnc?: string;
}

/**
 * Inserts an organisation with its domain and token lookups (reference tables
 * under Citus, written in the same transaction); undefined when its domain is
 * taken (also under a concurrent insert: the domain row decides).
 */
export async function insertOrganisation(tx: Transaction<DB>, o: NewOrganisation): Promise<OrganisationRow | undefined> {
  const { rows } = await sql<{ id: string }>`SELECT nextval('organisations_id_seq') AS id`.execute(tx);
  const id = asOrgId(Number(rows[0]!.id));
  const claimed = await tx
    .insertInto('organisation_domains')
    .values({ domain_key: o.domainKey, org_id: id })
    .onConflict((oc) => oc.column('domain_key').doNothing())
    .returning('org_id')
    .executeTakeFirst();
  if (!claimed) return undefined;
  await tx.insertInto('organisation_tokens').values({ token_hash: o.tokenHash, org_id: id }).execute();
  await tx
    .insertInto('organisations')
    .values({
      id,
      token: null,
      token_enc: o.tokenEnc,
      token_hash: o.tokenHash,
      domain: o.domain,
      domain_key: o.domainKey,
      organisation_name: o.organisationName,
      created_by: o.createdBy,
      identity_secret_enc: o.identitySecretEnc ?? null,
    })
    .execute();
  // read back rather than RETURNING: Citus allows no stable function (to_char of a timestamptz) there
  return tx
    .selectFrom('organisations')
    .select([...ORGANISATION_COLUMNS, micro('organisations.created_at').as('created_at'), micro('organisations.modified_at').as('modified_at')])
    .where('organisations.id', '=', id)
    .executeTakeFirstOrThrow();
}

export async function insertMembers(tx: Transaction<DB>, orgId: OrgId, members: { userId: number; role: 'owner' | 'platform' }[]): Promise<void> {
  if (members.length === 0) return;
  await tx
    .insertInto('organisation_members')
    .values(members.map((m) => ({ user_id: m.userId, org_id: orgId, role: m.role })))
    .onConflict((oc) => oc.columns(['user_id', 'org_id']).doNothing())
    .execute();
}

/** The organisations assigned to the user (their rows). */
function assignedOrganisations(db: Executor, userId: number) {
  return db
    .selectFrom('organisations')
    .where('organisations.id', 'in', memberOrganisations(db, userId))
    .select([...ORGANISATION_COLUMNS, micro('organisations.created_at').as('created_at'), micro('organisations.modified_at').as('modified_at')]);
}

/** Whether the organisation is assigned to the user. */
export async function isOrganisationMember(db: Executor, userId: number, orgId: OrgId): Promise<boolean> {
  const row = await orgScoped(db, orgId).selectFrom('organisation_members').select('org_id').where('user_id', '=', userId).executeTakeFirst();
  return row !== undefined;
}

/** One organisation assigned to the user, or undefined. */
export function findMemberOrganisation(db: Executor, userId: number, orgId: OrgId): Promise<OrganisationRow | undefined> {
  return assignedOrganisations(db, userId).where('organisations.id', '=', orgId).executeTakeFirst();
}

/** `%`, `_` and the escape character itself match literally. */
function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Organisations assigned to the user, newest first (by id), after `beforeId`
 * when given; `q` keeps those whose domain contains it, case-insensitively.
 */
export function listMemberOrganisations(
  db: Executor,
  userId: number,
  opts: { q?: string; beforeId?: number; limit: number },
): Promise<OrganisationRow[]> {
  let query = assignedOrganisations(db, userId);
  if (opts.q !== undefined) {
    query = query.where(sql<boolean>`organisations.domain ILIKE ${likeContains(opts.q)} ESCAPE '\\'`);
  }
  // a cursor's position, not an organisation to look up: any number orders
  if (opts.beforeId !== undefined) query = query.where(sql<boolean>`organisations.id < ${opts.beforeId}`);
  return query.orderBy('organisations.id', 'desc').limit(opts.limit).execute();
}

/** The organisation holding a token, by the unique sha256 of the token (organisationTokenHash), through its lookup table. */
export async function findOrganisationByTokenHash(db: Executor, tokenHash: Buffer) {
  const owner = await db.selectFrom('organisation_tokens').select('org_id').where('token_hash', '=', tokenHash).executeTakeFirst();
  if (!owner) return undefined;
  return db.selectFrom('organisations').select(['id', 'token_hash', 'is_active']).where('id', '=', owner.org_id).executeTakeFirst();
}

/** The organisation of a normalised domain (domainKey), with its token columns, through its lookup table. */
export async function findOrganisationByDomainKey(db: Executor, key: string) {
  const owner = await db.selectFrom('organisation_domains').select('org_id').where('domain_key', '=', key).executeTakeFirst();
  if (!owner) return undefined;
  return db.selectFrom('organisations').select(['id', 'token', 'token_enc']).where('id', '=', owner.org_id).executeTakeFirst();
}

/** Organisations whose token is still in clear (written before tokens were sealed), a batch at a time. */
export function organisationsWithClearToken(db: Executor, limit: number) {
  return db.selectFrom('organisations').select(['id', 'token']).where('token', 'is not', null).orderBy('id').limit(limit).execute() as Promise<
    { id: number; token: string }[]
  >;
}

/** Stores each sealed token and clears the token in clear (only where it is still there). */
export async function sealOrganisationTokens(db: Executor, rows: { id: number; tokenEnc: string }[]): Promise<number> {
  if (rows.length === 0) return 0;
  const { numAffectedRows } = await sql`
    UPDATE organisations AS o SET token_enc = v.enc, token = NULL
    FROM unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.tokenEnc)}::text[]) AS v (id, enc)
    WHERE o.id = v.id AND o.token IS NOT NULL
  `.execute(db);
  return Number(numAffectedRows ?? 0);
}
