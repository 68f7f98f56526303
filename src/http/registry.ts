// The one registry of handlers, typed against the generated operations: a
// missing handler is a compile error, and boot checks it against the contract.
// It is also the one place src/http/ reaches the areas from: the bearer check,
// the webhook docs page and the dashboard's routes are re-exported below.
import type { Deps } from '../deps.ts';
import { healthHandlers } from './health.handlers.ts';
import { trackingHandlers } from '../tracking/tracking.handlers.ts';
import { eventReadHandlers } from '../tracking/events.handlers.ts';
import { visitorHandlers } from '../identity/visitors.handlers.ts';
import { platformHandlers } from '../platform/platform.handlers.ts';
import { deliveriesHandlers } from '../webhooks/deliveries.handlers.ts';
import { integrationsHandlers } from '../webhooks/integrations.handlers.ts';
import { trackerHandlers } from '../tracking/tracker.handlers.ts';
import { statsHandlers } from '../tracking/stats.handlers.ts';
import { analyticsHandlers } from '../analytics/analytics.handlers.ts';
import { privacyHandlers } from '../privacy/privacy.handlers.ts';
import type { HandlerMap } from './types.ts';

export function handlers(deps: Deps): HandlerMap {
  return {
    ...healthHandlers(deps),
    ...trackingHandlers(deps),
    ...eventReadHandlers(deps),
    ...visitorHandlers(deps),
    ...platformHandlers(deps),
    ...deliveriesHandlers(deps),
    ...integrationsHandlers(deps),
    ...trackerHandlers(deps),
    ...analyticsHandlers(deps),
    ...statsHandlers(deps),
    ...privacyHandlers(deps),
  };
}

export { authenticate } from '../platform/auth.service.ts';
export { webhookDocsHtml } from '../webhooks/webhooks-docs.page.ts';
export { dashboardRoutes } from '../dashboard/routes.ts';
