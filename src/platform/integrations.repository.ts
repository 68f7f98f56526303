// integrations: Kysely only. Every query is scoped by organisation, and a
// deleted integration (deleted_at set) is invisible to all of them.
import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import { memberOrganisations, orgScoped, type Executor } from '../db/tenancy.ts';


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
function liveIntegrations(db: Executor, orgId: number) {
  return orgScoped(db, orgId).selectFrom('integrations').where('deleted_at', 'is', null);
}

export function insertIntegration(
  tx: Transaction<DB>,
  orgId: number,
  fields: IntegrationFields,
  signingSecretEnc: string,
): Promise<IntegrationRow> {
  return tx
    .insertInto('integrations')
    .values({ org_id: orgId, ...columns(fields), signing_secret_enc: signingSecretEnc, deleted_at: null })
    .returning(INTEGRATION_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** A live integration of the organisation, locked for update inside a transaction when asked. */
export function findIntegration(db: Executor, orgId: number, id: number, opts: { lock?: boolean } = {}) {
  let q = liveIntegrations(db, orgId).select(INTEGRATION_COLUMNS).where('id', '=', id);
  if (opts.lock) q = q.forUpdate();
  return q.executeTakeFirst() as Promise<IntegrationRow | undefined>;
}

/** A live integration of any organisation assigned to the user. */
export function findMemberIntegration(db: Executor, userId: number, id: number, opts: { lock?: boolean } = {}) {
  let q = db
    .selectFrom('integrations')
    .select(INTEGRATION_COLUMNS)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('org_id', 'in', memberOrganisations(db, userId));
  if (opts.lock) q = q.forUpdate();
  return q.executeTakeFirst() as Promise<IntegrationRow | undefined>;
}

export function replaceIntegration(
  tx: Transaction<DB>,
  orgId: number,
  id: number,
  fields: IntegrationFields,
): Promise<IntegrationRow | undefined> {
  return orgScoped(tx, orgId)
    .updateTable('integrations')
    .set({ ...columns(fields), modified_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(INTEGRATION_COLUMNS)
    .executeTakeFirst();
}

/** Soft delete; false when there was no live integration to delete. */
export async function deleteIntegration(tx: Transaction<DB>, orgId: number, id: number): Promise<boolean> {
  const r = await orgScoped(tx, orgId)
    .updateTable('integrations')
    .set({ deleted_at: sql<Date>`now()`, active: false, modified_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Live integrations of the organisation, oldest first, after `afterId` when given. */
export function listIntegrations(db: Executor, orgId: number, opts: { afterId?: number; limit: number }) {
  let q = liveIntegrations(db, orgId).select(INTEGRATION_COLUMNS);
  if (opts.afterId !== undefined) q = q.where('id', '>', opts.afterId);
  return q.orderBy('id', 'asc').limit(opts.limit).execute() as Promise<IntegrationRow[]>;
}

/** Deactivates a live, active integration (Trackway disabling a failing endpoint); false when it was not active. */
export async function deactivateIntegration(tx: Transaction<DB>, orgId: number, id: number): Promise<boolean> {
  const r = await orgScoped(tx, orgId)
    .updateTable('integrations')
    .set({ active: false, modified_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('active', '=', true)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
