// The platform area's handlers for the registry: login,
// registration, webhook integrations and organisation reads.
import type { Deps } from '../deps.ts';
import { integrationsHandlers } from './integrations.handlers.ts';
import { organisationsHandlers } from './organisations.handlers.ts';
import { usersHandlers } from './users.handlers.ts';

export function platformHandlers(deps: Deps) {
  return {
    ...usersHandlers(deps),
    ...integrationsHandlers(deps),
    ...organisationsHandlers(deps),
  };
}
