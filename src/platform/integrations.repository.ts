// integrations: Kysely only. Every query is scoped by organisation, and a
// deleted integration (deleted_at set) is invisible to all of them.
import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import type { DB } from '../db/schema.ts';

type Db = Database | Transaction<DB>;

export const INTEGRATION_COLUMNS = [
  'id',
  'org_id',
  'type',
  'active',
  'endpoint',
  'auth_token_enc',
  'auth_token_hint',
  'http_timeout',
  'do_events',
  'do_contacts',
  'signing_secret_enc',
  'created_at',
  'modified_at',
] as const;

export interface IntegrationRow {
  id: number;
  org_id: number;
  type: 'WEBHOOK';
  active: boolean;
  endpoint: string;
  auth_token_enc: string | null;
  auth_token_hint: string | null;
  http_timeout: number;
  do_events: boolean;
  do_contacts: boolean;
  signing_secret_enc: string;
  created_at: Date;
  modified_at: Date;
}

/** The replaceable fields of an integration, as stored. */
export interface IntegrationFields {
  type: 'WEBHOOK';
  active: boolean;
  endpoint: string;
  authTokenEnc: string | null;
  authTokenHint: string | null;
  httpTimeout: number;
  doEvents: boolean;
  doContacts: boolean;
}

function columns(f: IntegrationFields) {
  return {
    type: f.type,
    active: f.active,
    endpoint: f.endpoint,
    auth_token_enc: f.authTokenEnc,
    auth_token_hint: f.authTokenHint,
    http_timeout: f.httpTimeout,
    do_events: f.doEvents,
    do_contacts: f.doContacts,
  };
}

/** The live (not deleted) integrations of one organisation. */
function orgScoped(db: Db, orgId: number) {
  return db.selectFrom('integrations').where('org_id', '=', orgId).where('deleted_at', 'is', null);
}

/** Inserts an integration and its row in integration_owners (the id-only lookup), in the caller's transaction. */
export async function insertIntegration(
  tx: Transaction<DB>,
  orgId: number,
  fields: IntegrationFields,
  signingSecretEnc: string,
): Promise<IntegrationRow> {
  const { rows } = await sql<{ id: string }>`SELECT nextval('integrations_id_seq') AS id`.execute(tx);
  const id = Number(rows[0]!.id);
  await tx.insertInto('integration_owners').values({ id, org_id: orgId }).execute();
  return tx
    .insertInto('integrations')
    .values({ org_id: orgId, id, ...columns(fields), signing_secret_enc: signingSecretEnc, deleted_at: null })
    .returning(INTEGRATION_COLUMNS)
    .executeTakeFirstOrThrow();
}

/**
 * The organisation of an integration id, when that organisation is assigned
 * to the user: both reference tables, so the tenant query that follows names
 * one organisation (one shard under Citus).
 */
export async function memberIntegrationOrg(db: Db, userId: number, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('integration_owners as o')
    .innerJoin('organisation_members as m', 'm.org_id', 'o.org_id')
    .select('o.org_id')
    .where('o.id', '=', id)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
  return row?.org_id;
}

/** A live integration of the organisation, locked for update inside a transaction when asked. */
export function findIntegration(db: Db, orgId: number, id: number, opts: { lock?: boolean } = {}) {
  let q = orgScoped(db, orgId).select(INTEGRATION_COLUMNS).where('id', '=', id);
  if (opts.lock) q = q.forUpdate();
  return q.executeTakeFirst() as Promise<IntegrationRow | undefined>;
}

/** A live integration of any organisation assigned to the user. */
export async function findMemberIntegration(
  db: Db,
  userId: number,
  id: number,
  opts: { lock?: boolean } = {},
): Promise<IntegrationRow | undefined> {
  const orgId = await memberIntegrationOrg(db, userId, id);
  return orgId === undefined ? undefined : findIntegration(db, orgId, id, opts);
}

export function replaceIntegration(
  tx: Transaction<DB>,
  orgId: number,
  id: number,
  fields: IntegrationFields,
): Promise<IntegrationRow | undefined> {
  return tx
    .updateTable('integrations')
    .set({ ...columns(fields), modified_at: sql<Date>`now()` })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(INTEGRATION_COLUMNS)
    .executeTakeFirst();
}

/** Soft delete; false when there was no live integration to delete. */
export async function deleteIntegration(tx: Transaction<DB>, orgId: number, id: number): Promise<boolean> {
  const r = await tx
    .updateTable('integrations')
    .set({ deleted_at: sql<Date>`now()`, active: false, modified_at: sql<Date>`now()` })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Live integrations of the organisation, oldest first, after `afterId` when given. */
export function listIntegrations(db: Db, orgId: number, opts: { afterId?: number; limit: number }) {
  let q = orgScoped(db, orgId).select(INTEGRATION_COLUMNS);
  if (opts.afterId !== undefined) q = q.where('id', '>', opts.afterId);
  return q.orderBy('id', 'asc').limit(opts.limit).execute() as Promise<IntegrationRow[]>;
}

/** Deactivates a live, active integration (Trackway disabling a failing endpoint); false when it was not active. */
export async function deactivateIntegration(tx: Transaction<DB>, orgId: number, id: number): Promise<boolean> {
  const r = await tx
    .updateTable('integrations')
    .set({ active: false, modified_at: sql<Date>`now()` })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('active', '=', true)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
