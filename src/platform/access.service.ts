// Tenant isolation for the platform API: every read or write that names an
// organisation starts here. An organisation not assigned to the caller answers
// 403/4030 whether or not it exists, so existence never leaks.
import type { Database } from '../db/database.ts';
import { platformError } from '../http/errors.ts';
import type { Principal } from '../http/types.ts';
import { isOrganisationMember } from './organisations.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

export function forbidden() {
  return platformError(403, 4030, 'The organisation is not assigned to this account');
}

/** Throws 403/4030 unless the organisation is assigned to the caller. */
export async function requireOrganisation(db: Database, principal: Principal, orgId: OrgId): Promise<void> {
  if (!(await isOrganisationMember(db, principal.userId, orgId))) throw forbidden();
}
