// listOrganisations, getOrganisation, updateOrganisationSettings,
// rotateIdentitySecret: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { getOrganisation, listOrganisations, rotateIdentitySecret, updateOrganisationSettings } from './organisations.service.ts';
import { principalOf } from './principal.rules.ts';

export function organisationsHandlers(
  deps: Deps,
): HandlerMap<'listOrganisations' | 'getOrganisation' | 'updateOrganisationSettings' | 'rotateIdentitySecret'> {
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
    updateOrganisationSettings: async (c) => {
      const body = await updateOrganisationSettings(deps, principalOf(c), c.request.params.org_id, c.request.requestBody);
      return { status: 200, body };
    },
    rotateIdentitySecret: async (c) => {
      const body = await rotateIdentitySecret(deps, principalOf(c), c.request.params.org_id);
      return { status: 200, body };
    },
  };
}
