// The branded OrgId (src/db/tenancy.ts): an organisation's id no longer swaps
// silently with an integration id or any other number. The refusals below are
// checked by `npm run typecheck` (tsconfig includes test/): each
// `@ts-expect-error` line must fail to compile, else the directive itself is
// an error (TS2578), so dropping the brand breaks the typecheck. The brand's
// run-time constructors are tested at the end.
import { expect } from 'chai';
import { asOrgId, type Executor, orgScoped, type OrgId, parseOrgId } from '../../src/db/tenancy.ts';
import type { PathOf, QueryOf } from '../../src/http/types.ts';
import type { Principal } from '../../src/http/types.ts';
import type { Database } from '../../src/db/database.ts';
import { requireOrganisation } from '../../src/platform/access.service.ts';
import { findIntegration, type IntegrationRow } from '../../src/webhooks/integrations.repository.ts';

/** Never called: the compiler is the one that runs it. */
export function swapsTheCompilerRefuses(db: Database, tx: Executor, principal: Principal, integration: IntegrationRow, n: number): void {
  // a row read from the database carries its organisation as an OrgId
  const org: OrgId = integration.org_id;
  void findIntegration(tx, org, integration.id);
  void requireOrganisation(db, principal, org);
  orgScoped(tx, org);

  // @ts-expect-error the integration's id where its organisation's is meant
  void findIntegration(tx, integration.id, integration.org_id);
  // @ts-expect-error an integration id is no organisation
  void requireOrganisation(db, principal, integration.id);
  // @ts-expect-error any number is no organisation either
  orgScoped(tx, n);
  // @ts-expect-error nor does an OrgId turn into an integration id unnoticed in a row
  const row: IntegrationRow = { ...integration, org_id: integration.id };
  void row;
}

// the contract's org_id parameters arrive branded, in the path and in the query
type PathOrg = PathOf<'getOrganisation'>['org_id'];
type QueryOrg = NonNullable<QueryOf<'listIntegrations'>>['org_id'];
export const pathBranded: PathOrg extends OrgId ? true : false = true;
export const queryBranded: QueryOrg extends OrgId ? true : false = true;

describe('OrgId', () => {
  it('is made from a positive safe integer only', () => {
    expect(asOrgId(42)).to.equal(42);
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 53]) expect(() => asOrgId(bad), String(bad)).to.throw(TypeError);
  });

  it('is read from text (a NOTIFY payload) as Number reads it, or not at all', () => {
    expect(parseOrgId('17')).to.equal(17);
    for (const bad of ['', '0', '-3', 'x', '1.5', '9007199254740993']) expect(parseOrgId(bad), bad).to.equal(undefined);
  });
});
