// getOrganisationStats: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { principalOf } from '../platform/principal.rules.ts';
import { organisationStats } from './stats.service.ts';

export function statsHandlers(deps: Deps): HandlerMap<'getOrganisationStats'> {
  return {
    getOrganisationStats: async (c) => ({
      status: 200,
      body: await organisationStats(deps, principalOf(c), c.request.params.org_id),
    }),
  };
}
