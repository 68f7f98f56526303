// submitLearningEvent (analytics host) and listLearnEvents (platform API):
// HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap, Principal } from '../http/types.ts';
import { listLearnEvents, submitLearningEvent } from './learn-events.service.ts';

export function learnEventsHandlers(deps: Deps): HandlerMap<'submitLearningEvent' | 'listLearnEvents'> {
  return {
    submitLearningEvent: async (c) => {
      await submitLearningEvent(deps, c.request.requestBody);
      return { status: 200, body: { status: 'success' } };
    },
    listLearnEvents: async (c) => {
      const { org_id } = c.request.params;
      const page = await listLearnEvents(deps, c.security.bearerAuth as Principal, org_id, c.request.query ?? {});
      return { status: 200, body: page };
    },
  };
}
