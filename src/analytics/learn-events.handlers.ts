// submitLearningEvent (analytics host) and listLearnEvents (platform API):
// HTTP shape only.
import type { Deps } from '../deps.ts';
import { requestCost } from '../http/traffic-limits.ts';
import type { HandlerMap } from '../http/types.ts';
import { principalOf } from '../platform/principal.rules.ts';
import { listLearnEvents, submitLearningEvent } from './learn-events.service.ts';

export function learnEventsHandlers(deps: Deps): HandlerMap<'submitLearningEvent' | 'listLearnEvents'> {
  // tracking limits (the process's set for the analytics host, deps.analyticsLimits): per client address here, per organisation once its token resolves
  const limits = deps.analyticsLimits;
  return {
    submitLearningEvent: async (c, ctx) => {
      const raw = (ctx.request as { rawBody?: unknown }).rawBody;
      const cost = requestCost(typeof raw === 'string' ? raw.length : 0);
      limits.ip(ctx.ip, cost);
      await submitLearningEvent(deps, c.request.requestBody, limits, cost);
      return { status: 200, body: { status: 'success' } };
    },
    listLearnEvents: async (c) => {
      const { org_id } = c.request.params;
      const page = await listLearnEvents(deps, principalOf(c), org_id, c.request.query ?? {});
      return { status: 200, body: page };
    },
  };
}
