// getVisitor / listVisitors: visitors of an organisation assigned to the
// caller, with the contacts and recent activity of the person each belongs to.
import type { Deps } from '../deps.ts';
import { platformError } from '../http/errors.ts';
import { cursorString, cursorTime, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { HandlerMap, Principal } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.ts';
import { personProfile } from './identity.repository.ts';
import { recentActivity } from './profile.ts';
import { contactsOfPersons, findVisitor, listVisitors } from './visitors.repository.ts';

export function visitorHandlers(deps: Deps): HandlerMap<'getVisitor' | 'listVisitors'> {
  const { db } = deps;
  return {
    getVisitor: async (c) => {
      const { org_id, core_id } = c.request.params;
      await requireOrganisation(db, c.security.bearerAuth as Principal, org_id);
      const v = await findVisitor(db, org_id, core_id);
      if (!v) throw platformError(404, 4040, 'Visitor not found');
      const contacts = await contactsOfPersons(db, org_id, [v.person_id]);
      // the URL policy as it is now (cached): foreign URLs recorded earlier are not shown
      const policy = await deps.organisations.policy(org_id);
      const recent = await recentActivity(db, org_id, await personProfile(db, org_id, v.person_id), policy?.allowsUrl ?? (() => false));
      return {
        status: 200,
        body: {
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
        },
      };
    },
    listVisitors: async (c) => {
      const { org_id } = c.request.params;
      const q = c.request.query ?? {};
      await requireOrganisation(db, c.security.bearerAuth as Principal, org_id);
      const limit = pageLimit(q.limit);
      const filters = { org_id, contacts_only: q.contacts_only === true };
      const pos = decodeCursor(q.cursor, filters);
      const after: [string, string] | undefined = pos ? [cursorTime(pos, 'at'), cursorString(pos, 'core_id')] : undefined;
      const rows = await listVisitors(db, { orgId: org_id, contactsOnly: filters.contacts_only, after, limit });
      const result = toPage(rows, limit, (v) => ({ at: v.last_seen.toISOString(), core_id: v.core_id }), filters);
      const contacts = await contactsOfPersons(db, org_id, [...new Set(result.rows.map((v) => v.person_id))]);
      return {
        status: 200,
        body: {
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
        },
      };
    },
  };
}
