// listOrganisations, getOrganisation: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { getOrganisation, listOrganisations } from './organisations.service.ts';
import { principalOf } from './principal.ts';

export function organisationsHandlers(deps: Deps): HandlerMap<'listOrganisations' | 'getOrganisation'> {
  return {
    listOrganisations: async (c) => {
      const q = c.request.query ?? {};
      const body = await listOrganisations(deps, principalOf(c), { q: q.q, cursor: q.cursor, limit: q.limit });
      return { status: 200, body };
    },
    getOrganisation: async (c) => {
      const body = await getOrganisation(deps, principalOf(c), c.request.params.org_id);
      return { status: 200, body };
    },
  };
}
