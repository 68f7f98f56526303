// Reading the organisations assigned to the caller (dashboard and
// integrators), changing their trust settings, and resolving an organisation
// token (the analytics host).
import { timingSafeEqual } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { cursorNumber, decodeCursor, pageLimit, toPage, type Page } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { forbidden, requireOrganisation } from './access.service.ts';
import { changeSettings, rotateSecret, trustSettings } from './organisation-settings.service.ts';
import {
  findMemberOrganisation,
  findOrganisationByDomainKey,
  findOrganisationByTokenHash,
  listMemberOrganisations,
  type OrganisationRow,
} from './organisations.repository.ts';
import { domainKey } from './normalise.rules.ts';
import { organisationToken, organisationTokenHash } from './registration.service.ts';
import { organisationView } from './users.service.ts';
import { asOrgId, type OrgId } from '../db/tenancy.ts';

type OrganisationDetail = Schemas['OrganisationDetail'];
type ReadDeps = Pick<Deps, 'db' | 'cipher' | 'organisations'>;

/** The domain key of an organisation assigned to the user (a test delivery's sample URLs); undefined when it is not theirs. */
export async function memberOrganisationDomainKey(db: Deps['db'], userId: number, orgId: OrgId): Promise<string | undefined> {
  return (await findMemberOrganisation(db, userId, orgId))?.domain_key;
}

/** The organisation as read by its platform account: the token decrypted (it is stored sealed) and its trust settings. */
export async function organisationDetailView(deps: ReadDeps, o: OrganisationRow): Promise<OrganisationDetail> {
  return { ...organisationView(o, organisationToken(deps.cipher, o)), organisation_name: o.organisation_name, ...(await trustSettings(deps, o)) };
}

export async function getOrganisation(deps: ReadDeps, principal: Principal, rawOrgId: unknown): Promise<OrganisationDetail> {
  const orgId = typeof rawOrgId === 'string' && /^\d{1,16}$/.test(rawOrgId) ? Number(rawOrgId) : rawOrgId;
  if (typeof orgId !== 'number' || !Number.isSafeInteger(orgId) || orgId < 1) throw forbidden();
  const org = asOrgId(orgId);
  await requireOrganisation(deps.db, principal, org);
  const row = await findMemberOrganisation(deps.db, principal.userId, org);
  if (!row) throw forbidden();
  return organisationDetailView(deps, row);
}

/** Newest first; `q` filters on the domain (case-insensitive substring). */
export async function listOrganisations(
  deps: ReadDeps,
  principal: Principal,
  query: { q?: string; cursor?: string; limit?: unknown },
): Promise<Page<OrganisationDetail>> {
  const limit = pageLimit(query.limit);
  const q = query.q === undefined || query.q === '' ? undefined : query.q;
  const filters = { q: q ?? null };
  const after = decodeCursor(query.cursor, filters);
  const rows = await listMemberOrganisations(deps.db, principal.userId, {
    q,
    beforeId: after ? cursorNumber(after, 'id') : undefined,
    limit: limit + 1,
  });
  const page = toPage(rows, limit, (last) => ({ id: last.id }), filters);
  const items: OrganisationDetail[] = [];
  for (const row of page.rows) items.push(await organisationDetailView(deps, row));
  return { items, next_cursor: page.next_cursor };
}

/** PATCH: identity_verification, allowed_domains, enforce_origin, export_unverified (at least one). */
export function updateOrganisationSettings(
  deps: ReadDeps,
  principal: Principal,
  orgId: OrgId,
  body: Schemas['OrganisationSettingsRequest'],
): Promise<OrganisationDetail> {
  return changeSettings(deps, principal, orgId, body, () => getOrganisation(deps, principal, orgId));
}

export function rotateIdentitySecret(deps: ReadDeps, principal: Principal, orgId: OrgId): Promise<OrganisationDetail> {
  return rotateSecret(deps, principal, orgId, () => getOrganisation(deps, principal, orgId));
}

/** For the operator (`trackway organisation token`): the organisation of a domain and its token in clear. */
export async function readOrganisationToken(deps: Pick<Deps, 'db' | 'cipher'>, domain: string): Promise<{ id: number; token: string } | undefined> {
  const key = domainKey(domain);
  const row = key ? await findOrganisationByDomainKey(deps.db, key) : undefined;
  return row && { id: row.id, token: organisationToken(deps.cipher, row) };
}

/**
 * The id of the active organisation holding `token`, or undefined. The lookup
 * is by the indexed sha256 of the token; the stored hash is then compared
 * with the computed one in constant time.
 */
export async function resolveOrgToken(db: Deps['db'], token: string): Promise<OrgId | undefined> {
  const hash = organisationTokenHash(token);
  const org = await findOrganisationByTokenHash(db, hash);
  if (!org || org.token_hash.length !== hash.length) return undefined;
  if (!timingSafeEqual(org.token_hash, hash)) return undefined;
  return org.is_active ? org.id : undefined;
}
