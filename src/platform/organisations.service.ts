// Reading the organisations assigned to the caller (dashboard and
// integrators), and changing their trust settings.
import type { Deps } from '../deps.ts';
import { cursorNumber, decodeCursor, pageLimit, toPage, type Page } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { forbidden, requireOrganisation } from './access.ts';
import { changeSettings, rotateSecret, trustSettings } from './organisation-settings.service.ts';
import { findMemberOrganisation, listMemberOrganisations, type OrganisationRow } from './organisations.repository.ts';
import { organisationView } from './users.service.ts';

type OrganisationDetail = Schemas['OrganisationDetail'];
type ReadDeps = Pick<Deps, 'db' | 'cipher' | 'organisations'>;

export async function organisationDetailView(deps: ReadDeps, o: OrganisationRow): Promise<OrganisationDetail> {
  return { ...organisationView(o), organisation_name: o.organisation_name, ...(await trustSettings(deps, o)) };
}

export async function getOrganisation(deps: ReadDeps, principal: Principal, rawOrgId: unknown): Promise<OrganisationDetail> {
  const orgId = typeof rawOrgId === 'string' && /^\d{1,16}$/.test(rawOrgId) ? Number(rawOrgId) : rawOrgId;
  if (typeof orgId !== 'number' || !Number.isSafeInteger(orgId) || orgId < 1) throw forbidden();
  await requireOrganisation(deps.db, principal, orgId);
  const row = await findMemberOrganisation(deps.db, principal.userId, orgId);
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

/** PATCH: identity_verification, allowed_domains, enforce_origin (at least one). */
export function updateOrganisationSettings(
  deps: ReadDeps,
  principal: Principal,
  orgId: number,
  body: Schemas['OrganisationSettingsRequest'],
): Promise<OrganisationDetail> {
  return changeSettings(deps, principal, orgId, body, () => getOrganisation(deps, principal, orgId));
}

export function rotateIdentitySecret(deps: ReadDeps, principal: Principal, orgId: number): Promise<OrganisationDetail> {
  return rotateSecret(deps, principal, orgId, () => getOrganisation(deps, principal, orgId));
}
