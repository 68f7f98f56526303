// The platform area's handlers for the registry: login,
// registration and organisation reads.
import type { Deps } from '../deps.ts';
import { organisationsHandlers } from './organisations.handlers.ts';
import { usersHandlers } from './users.handlers.ts';

export function platformHandlers(deps: Deps) {
  return {
    ...usersHandlers(deps),
    ...organisationsHandlers(deps),
  };
}
