// Organisation ids made by tests: a number the test knows names an organisation
// (one the server created, or a unit test's 1 and 2, or one that does not
// exist on purpose) becomes an OrgId here, as src/ does at its boundaries.
import { asOrgId, type OrgId } from '../../src/db/tenancy.ts';

export type { OrgId };

/** The organisation `n` (a positive integer), typed as src/ types it. */
export function testOrgId(n: number): OrgId {
  return asOrgId(n);
}
