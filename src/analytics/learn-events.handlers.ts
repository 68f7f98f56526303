// submitLearningEvent (analytics host) and listLearnEvents (platform API):
// HTTP shape only.
import type { Deps } from '../deps.ts';
import { createTrafficLimits } from '../http/traffic-limits.ts';
import type { HandlerMap, Principal } from '../http/types.ts';
import { listLearnEvents, submitLearningEvent } from './learn-events.service.ts';

export function learnEventsHandlers(deps: Deps): HandlerMap<'submitLearningEvent' | 'listLearnEvents'> {
  // TRACKING_RATE_LIMIT: per client IP here, per organisation once its token resolves
  const limits = createTrafficLimits('analytics', deps.config.trackingRateLimit);
  return {
    submitLearningEvent: async (c, ctx) => {
      limits.ip(ctx.ip);
      await submitLearningEvent(deps, c.request.requestBody, limits);
      return { status: 200, body: { status: 'success' } };
    },
    listLearnEvents: async (c) => {
      const { org_id } = c.request.params;
      const page = await listLearnEvents(deps, c.security.bearerAuth as Principal, org_id, c.request.query ?? {});
      return { status: 200, body: page };
    },
  };
}
