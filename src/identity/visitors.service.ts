// Reading visitors: an organisation assigned to the caller, with the contacts
// and recent activity of the person each visitor belongs to; cursors decoded
// here, pages shaped as the contract says.
import type { Deps } from '../deps.ts';
import { platformError } from '../http/errors.ts';
import { cursorString, cursorTime, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.service.ts';
import { personProfile } from './identity.repository.ts';
import { recentActivity } from './profile.service.ts';
import { contactsLinked, contactsOfPersons, findVisitor, listVisitors, visitorsSeen } from './visitors.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

type ReadDeps = Pick<Deps, 'db' | 'organisations'>;

export async function visitorDetail(deps: ReadDeps, principal: Principal, orgId: OrgId, coreId: string): Promise<Schemas['Visitor']> {
  const { db } = deps;
  await requireOrganisation(db, principal, orgId);
  const v = await findVisitor(db, orgId, coreId);
  if (!v) throw platformError(404, 4040, 'Visitor not found');
  const contacts = await contactsOfPersons(db, orgId, [v.person_id]);
  // the URL policy as it is now (cached): foreign URLs recorded earlier are not shown
  const policy = await deps.organisations.policy(orgId);
  const recent = await recentActivity(db, orgId, await personProfile(db, orgId, v.person_id), policy?.allowsUrl ?? (() => false));
  return {
    core_id: v.core_id,
    roaming_id: v.roaming_id,
    corex_id: v.corex_id,
    name: v.name,
    first_seen: v.first_seen.toISOString(),
    last_seen: v.last_seen.toISOString(),
    user_agent: v.user_agent,
    location: v.location,
    contacts: contacts.map(({ type, value, verified }) => ({ type, value, verified })),
    recent,
  };
}

export async function visitorPage(
  deps: ReadDeps,
  principal: Principal,
  orgId: OrgId,
  q: { limit?: number; cursor?: string; contacts_only?: boolean },
): Promise<Schemas['VisitorList']> {
  const { db } = deps;
  await requireOrganisation(db, principal, orgId);
  const limit = pageLimit(q.limit);
  const filters = { org_id: orgId, contacts_only: q.contacts_only === true };
  const pos = decodeCursor(q.cursor, filters);
  const after: [string, string] | undefined = pos ? [cursorTime(pos, 'at'), cursorString(pos, 'core_id')] : undefined;
  const rows = await listVisitors(db, { orgId, contactsOnly: filters.contacts_only, after, limit });
  const result = toPage(rows, limit, (v) => ({ at: v.last_seen.toISOString(), core_id: v.core_id }), filters);
  const contacts = await contactsOfPersons(db, orgId, [...new Set(result.rows.map((v) => v.person_id))]);
  return {
    items: result.rows.map((v) => ({
      core_id: v.core_id,
      corex_id: v.corex_id,
      name: v.name,
      first_seen: v.first_seen.toISOString(),
      last_seen: v.last_seen.toISOString(),
      location: v.location,
      contacts: contacts.filter((x) => x.person_id === v.person_id).map(({ type, value, verified }) => ({ type, value, verified })),
    })),
    next_cursor: result.next_cursor,
  };
}

/** Visitors seen and contacts linked since `since` (and since `recentSince`): identity's part of the organisation's stats. */
export async function visitorActivity(deps: Pick<Deps, 'db'>, orgId: OrgId, since: Date, recentSince: Date) {
  const [visitors, contacts] = await Promise.all([
    visitorsSeen(deps.db, orgId, since, recentSince),
    contactsLinked(deps.db, orgId, since, recentSince),
  ]);
  return { visitors, contacts };
}
