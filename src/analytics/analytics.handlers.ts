// The analytics area's handlers for the registry: learning events,
// their listing for platform users, and self-service registration.
import type { Deps } from '../deps.ts';
import { learnEventsHandlers } from './learn-events.handlers.ts';
import { registrationHandlers } from './registration.handlers.ts';

export function analyticsHandlers(deps: Deps) {
  return {
    ...learnEventsHandlers(deps),
    ...registrationHandlers(deps),
  };
}
