// integrations: Kysely only. Every query is scoped by organisation, and a
// deleted integration (deleted_at set) is invisible to all of them.
import type { Selectable, Transaction } from 'kysely';
import { sql } from 'kysely';
import type { DB, IntegrationsTable } from '../db/schema.ts';
import { type Executor, memberOrganisations, orgScoped, type OrgId } from '../db/tenancy.ts';

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

/** A live integration: every column but deleted_at. */
export type IntegrationRow = Omit<Selectable<IntegrationsTable>, 'deleted_at'>;

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
function liveIntegrations(db: Executor, orgId: OrgId) {
  return orgScoped(db, orgId).selectFrom('integrations').where('deleted_at', 'is', null);
}

/** Inserts an integration and its row in integration_owners (the id-only lookup), in the caller's transaction. */
export async function insertIntegration(
  tx: Transaction<DB>,
  orgId: OrgId,
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
export async function memberIntegrationOrg(db: Executor, userId: number, id: number): Promise<OrgId | undefined> {
  const row = await db
    .selectFrom('integration_owners as o')
    .select('o.org_id')
    .where('o.id', '=', id)
    .where('o.org_id', 'in', memberOrganisations(db, userId))
    .executeTakeFirst();
  return row?.org_id;
}

/** A live integration of the organisation, locked for update inside a transaction when asked. */
export function findIntegration(db: Executor, orgId: OrgId, id: number, opts: { lock?: boolean } = {}) {
  let q = liveIntegrations(db, orgId).select(INTEGRATION_COLUMNS).where('id', '=', id);
  if (opts.lock) q = q.forUpdate();
  return q.executeTakeFirst() as Promise<IntegrationRow | undefined>;
}

/** A live integration of any organisation assigned to the user. */
export async function findMemberIntegration(
  db: Executor,
  userId: number,
  id: number,
  opts: { lock?: boolean } = {},
): Promise<IntegrationRow | undefined> {
  const orgId = await memberIntegrationOrg(db, userId, id);
  return orgId === undefined ? undefined : findIntegration(db, orgId, id, opts);
}

export function replaceIntegration(tx: Transaction<DB>, orgId: OrgId, id: number, fields: IntegrationFields): Promise<IntegrationRow | undefined> {
  return orgScoped(tx, orgId)
    .updateTable('integrations')
    .set({ ...columns(fields), modified_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(INTEGRATION_COLUMNS)
    .executeTakeFirst();
}

/** Soft delete; false when there was no live integration to delete. */
export async function deleteIntegration(tx: Transaction<DB>, orgId: OrgId, id: number): Promise<boolean> {
  const r = await orgScoped(tx, orgId)
    .updateTable('integrations')
    .set({ deleted_at: sql<Date>`now()`, active: false, modified_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Live integrations of the organisation, oldest first, after `afterId` when given. */
export function listIntegrations(db: Executor, orgId: OrgId, opts: { afterId?: number; limit: number }) {
  let q = liveIntegrations(db, orgId).select(INTEGRATION_COLUMNS);
  if (opts.afterId !== undefined) q = q.where('id', '>', opts.afterId);
  return q.orderBy('id', 'asc').limit(opts.limit).execute() as Promise<IntegrationRow[]>;
}

/** Deactivates a live, active integration (Trackway disabling a failing endpoint); false when it was not active. */
export async function deactivateIntegration(tx: Transaction<DB>, orgId: OrgId, id: number): Promise<boolean> {
  const r = await orgScoped(tx, orgId)
    .updateTable('integrations')
    .set({ active: false, modified_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('active', '=', true)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

// What other areas read of integrations: functions here, so that no other
// area queries the table itself.

/** The active integrations of an organisation that receive notifications (webhooks' target cache). */
export function listActiveTargets(db: Executor, orgId: OrgId) {
  return liveIntegrations(db, orgId).select(['id', 'do_events', 'do_contacts']).where('active', '=', true).orderBy('id').execute();
}

/** Whether the integration is active and not deleted. */
export async function integrationIsLive(db: Executor, orgId: OrgId, integrationId: number): Promise<boolean> {
  const row = await liveIntegrations(db, orgId).select('id').where('id', '=', integrationId).where('active', '=', true).executeTakeFirst();
  return row !== undefined;
}

export type IntegrationTargetRow = Pick<
  IntegrationRow,
  'id' | 'org_id' | 'endpoint' | 'auth_token_enc' | 'signing_secret_enc' | 'http_timeout' | 'modified_at'
>;

/** A live (not deleted) integration of any organisation assigned to the user: what a test delivery needs. */
export async function findMemberIntegrationTarget(db: Executor, userId: number, id: number): Promise<IntegrationTargetRow | undefined> {
  const orgId = await memberIntegrationOrg(db, userId, id);
  if (orgId === undefined) return undefined;
  return liveIntegrations(db, orgId)
    .select(['id', 'org_id', 'endpoint', 'auth_token_enc', 'signing_secret_enc', 'http_timeout', 'modified_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Every organisation's active, live integrations (org_id, id): a subquery for the webhook backlog count. */
export function activeIntegrationKeys(db: Executor) {
  return db.selectFrom('integrations').select(['org_id', 'id']).where('active', '=', true).where('deleted_at', 'is', null);
}
