// Webhook integrations (createIntegration, updateIntegration, getIntegration, patchIntegration, deleteIntegration, listIntegrations and the unscoped forms; docs/design.md "Platform API").
// Secrets at rest: authToken and the signing secret are AES-256-GCM sealed
// (deps.cipher); the authToken is only ever shown masked. Every write runs in
// one transaction with the outbox (cancel pending deliveries) and the change
// announcement, and the local targets cache is invalidated after commit.
import { randomBytes } from 'node:crypto';
import { asOrgId, type Executor, type OrgId } from '../db/tenancy.ts';
import type { Deps } from '../deps.ts';
import { platformError } from '../http/errors.ts';
import { cursorNumber, decodeCursor, pageLimit, toPage, type Page } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { HEALTHY, type IntegrationHealth, healthView } from './circuit-breaker.rules.ts';
import { clearEndpointHealth, readEndpointHealth } from './endpoint-health.repository.ts';
import { cancelPendingDeliveries } from './outbox.repository.ts';
import { announceIntegrationChange } from './targets.service.ts';
import { forbidden, requireOrganisation } from '../platform/access.service.ts';
import {
  type IntegrationFields,
  type IntegrationRow,
  deleteIntegration as deleteRow,
  findIntegration,
  findMemberIntegration,
  insertIntegration,
  listIntegrations as listRows,
  replaceIntegration,
} from './integrations.repository.ts';
import type { Cipher } from '../platform/secrets.service.ts';

type IntegrationDeps = Pick<Deps, 'db' | 'cipher' | 'targets'>;
type Integration = Schemas['Integration'];

export const DEFAULT_HTTP_TIMEOUT = 10;
/** Tokens shorter than this are masked entirely: their last 4 characters would give too much away. */
const MIN_REVEAL_LENGTH = 12;

export function notFound() {
  return platformError(404, 4040, 'Integration not found');
}

/** `****` + the last 4 characters, or just `****` for a short token. */
export function maskToken(token: string): string {
  const chars = Array.from(token);
  return chars.length >= MIN_REVEAL_LENGTH ? `****${chars.slice(-4).join('')}` : '****';
}

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Ids arrive as JSON numbers or path strings; anything not a positive safe integer matches nothing. */
function asId(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

function invalid(path: string, message: string) {
  return platformError(400, 4000, `Invalid request: ${path} ${message}`, [{ path, message }]);
}

/** Throws 400 unless `endpoint` is an absolute http(s) URL. */
function checkEndpoint(endpoint: string): void {
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw invalid('/data/endpoint', 'must be an absolute http or https URL');
  }
}

/** The stored form of the fields a create or a replace sends (a PUT replaces every field). */
function toFields(cipher: Cipher, body: Schemas['CreateIntegrationRequest']): IntegrationFields {
  const { data } = body;
  checkEndpoint(data.endpoint);
  const token = data.authToken;
  return {
    type: body.type,
    active: body.active,
    endpoint: data.endpoint,
    authTokenEnc: token === undefined ? null : cipher.encrypt(token),
    authTokenHint: token === undefined ? null : maskToken(token),
    httpTimeout: data.httpTimeout === undefined ? DEFAULT_HTTP_TIMEOUT : Number(data.httpTimeout),
    doEvents: data.do_events,
    doContacts: data.do_contacts,
  };
}

/** `health` is the endpoint's circuit-breaker state (webhooks/circuit-breaker.rules.ts). */
export function integrationView(cipher: Cipher, row: IntegrationRow, health: IntegrationHealth = HEALTHY): Integration {
  const data: Integration['data'] = {
    endpoint: row.endpoint,
    ...(row.auth_token_enc === null ? {} : { authToken: row.auth_token_hint ?? '****' }),
    httpTimeout: String(row.http_timeout),
    do_events: row.do_events,
    do_contacts: row.do_contacts,
  };
  return {
    id: row.id,
    org_id: row.org_id,
    active: row.active,
    type: row.type,
    data,
    signing_secret: cipher.decrypt(row.signing_secret_enc),
    created_at: row.created_at.toISOString(),
    modified_at: row.modified_at.toISOString(),
    health,
  };
}

/** Integrations as answered: each with its endpoint's health (one keyed read for all of them). */
async function withHealth(deps: IntegrationDeps, orgId: OrgId, rows: IntegrationRow[], db: Executor = deps.db): Promise<Integration[]> {
  const health = await readEndpointHealth(
    db,
    orgId,
    rows.map((r) => r.id),
  );
  return rows.map((r) => integrationView(deps.cipher, r, healthView(health.get(r.id))));
}

/** Activating an inactive integration, or pointing it elsewhere, forgets its endpoint's failures (and a disabling). */
function resetsHealth(before: IntegrationRow, after: IntegrationRow): boolean {
  return (after.active && !before.active) || after.endpoint !== before.endpoint;
}

async function requireOrg(deps: IntegrationDeps, principal: Principal, rawOrgId: unknown): Promise<OrgId> {
  const id = asId(rawOrgId);
  if (id === undefined) throw forbidden();
  const orgId = asOrgId(id);
  await requireOrganisation(deps.db, principal, orgId);
  return orgId;
}

export async function createIntegration(
  deps: IntegrationDeps,
  principal: Principal,
  body: Schemas['CreateIntegrationRequest'],
): Promise<Integration> {
  const fields = toFields(deps.cipher, body);
  const orgId = await requireOrg(deps, principal, body.org_id);
  const sealedSecret = deps.cipher.encrypt(newSigningSecret());
  const row = await deps.db.transaction().execute(async (tx) => {
    const created = await insertIntegration(tx, orgId, fields, sealedSecret);
    await announceIntegrationChange(tx, orgId);
    return created;
  });
  deps.targets.invalidate(orgId);
  return integrationView(deps.cipher, row);
}

/** PUT: replaces the integration `id` of `org_id`; it cannot change organisation. */
export async function updateIntegration(
  deps: IntegrationDeps,
  principal: Principal,
  body: Schemas['UpdateIntegrationRequest'],
): Promise<Integration> {
  const fields = toFields(deps.cipher, body);
  const orgId = await requireOrg(deps, principal, body.org_id);
  const id = asId(body.id);
  if (id === undefined) throw notFound();
  const row = await deps.db.transaction().execute(async (tx) => {
    const existing = await findIntegration(tx, orgId, id, { lock: true });
    if (!existing) throw notFound();
    const updated = await replaceIntegration(tx, orgId, id, fields);
    if (!updated) throw notFound();
    if (!updated.active) await cancelPendingDeliveries(tx, orgId, id);
    if (resetsHealth(existing, updated)) await clearEndpointHealth(tx, orgId, id);
    await announceIntegrationChange(tx, orgId);
    return updated;
  });
  deps.targets.invalidate(orgId);
  return (await withHealth(deps, orgId, [row]))[0]!;
}

/** scheme, host and port of a URL (the default port of the scheme made explicit) */
function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * The stored fields of `row` with the changes of a PATCH applied; left-out
 * fields (and the credential) are kept, except that a new endpoint on another
 * origin (scheme, host, port) drops the stored authToken unless the same
 * request sends one: the credential was given for the old origin, and whoever
 * may edit the integration must not be able to have it sent elsewhere (issue
 * 12: PATCH the endpoint to a server you control, then "send test").
 */
function patchedFields(cipher: Cipher, row: IntegrationRow, patch: Schemas['PatchIntegrationRequest']): IntegrationFields {
  const data = patch.data ?? {};
  if (data.endpoint !== undefined) checkEndpoint(data.endpoint);
  const movesOrigin = data.endpoint !== undefined && originOf(data.endpoint) !== originOf(row.endpoint);
  const token = data.authToken === undefined && movesOrigin ? null : data.authToken;
  return {
    type: row.type,
    active: patch.active ?? row.active,
    endpoint: data.endpoint ?? row.endpoint,
    authTokenEnc: token === undefined ? row.auth_token_enc : token === null ? null : cipher.encrypt(token),
    authTokenHint: token === undefined ? row.auth_token_hint : token === null ? null : maskToken(token),
    httpTimeout: data.httpTimeout === undefined ? row.http_timeout : Number(data.httpTimeout),
    doEvents: data.do_events ?? row.do_events,
    doContacts: data.do_contacts ?? row.do_contacts,
  };
}

/** PATCH: changes the fields sent of an integration of an organisation assigned to the caller. */
export async function patchIntegration(
  deps: IntegrationDeps,
  principal: Principal,
  rawId: unknown,
  patch: Schemas['PatchIntegrationRequest'],
): Promise<Integration> {
  const id = asId(rawId);
  if (id === undefined) throw notFound();
  const row = await deps.db.transaction().execute(async (tx) => {
    const existing = await findMemberIntegration(tx, principal.userId, id, { lock: true });
    if (!existing) throw notFound();
    const updated = await replaceIntegration(tx, existing.org_id, id, patchedFields(deps.cipher, existing, patch));
    if (!updated) throw notFound();
    if (!updated.active) await cancelPendingDeliveries(tx, existing.org_id, id);
    if (resetsHealth(existing, updated)) await clearEndpointHealth(tx, existing.org_id, id);
    await announceIntegrationChange(tx, existing.org_id);
    return updated;
  });
  deps.targets.invalidate(row.org_id);
  return (await withHealth(deps, row.org_id, [row]))[0]!;
}

export async function getIntegration(deps: IntegrationDeps, principal: Principal, rawId: unknown): Promise<Integration> {
  const id = asId(rawId);
  if (id === undefined) throw notFound();
  // the row and its health from one snapshot: an auto-disable between two reads
  // would show a disabled endpoint on an integration still active
  return snapshot(deps, async (tx) => {
    const row = await findMemberIntegration(tx, principal.userId, id);
    if (!row) throw notFound();
    return (await withHealth(deps, row.org_id, [row], tx))[0]!;
  });
}

/** Reads that must agree with each other (an integration and its endpoint's health). */
function snapshot<T>(deps: IntegrationDeps, read: (tx: Executor) => Promise<T>): Promise<T> {
  return deps.db.transaction().setIsolationLevel('repeatable read').execute(read);
}

/** Soft delete: gone for every read and write; pending deliveries are cancelled. */
export async function deleteIntegration(deps: IntegrationDeps, principal: Principal, rawId: unknown): Promise<void> {
  const id = asId(rawId);
  if (id === undefined) throw notFound();
  const orgId = await deps.db.transaction().execute(async (tx) => {
    const row = await findMemberIntegration(tx, principal.userId, id, { lock: true });
    if (!row) throw notFound();
    if (!(await deleteRow(tx, row.org_id, id))) throw notFound();
    await cancelPendingDeliveries(tx, row.org_id, id);
    await clearEndpointHealth(tx, row.org_id, id);
    await announceIntegrationChange(tx, row.org_id);
    return row.org_id;
  });
  deps.targets.invalidate(orgId);
}

export async function listIntegrations(
  deps: IntegrationDeps,
  principal: Principal,
  query: { org_id: unknown; cursor?: string; limit?: unknown },
): Promise<Page<Integration>> {
  const orgId = await requireOrg(deps, principal, query.org_id);
  const limit = pageLimit(query.limit);
  const filters = { org_id: orgId };
  const after = decodeCursor(query.cursor, filters);
  return snapshot(deps, async (tx) => {
    const rows = await listRows(tx, orgId, {
      afterId: after ? cursorNumber(after, 'id') : undefined,
      limit: limit + 1,
    });
    const page = toPage(rows, limit, (last) => ({ id: last.id }), filters);
    return { items: await withHealth(deps, orgId, page.rows, tx), next_cursor: page.next_cursor };
  });
}
