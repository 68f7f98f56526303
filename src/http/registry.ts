// The one registry of handlers, typed against the generated operations: a
// missing handler is a compile error, and boot checks it against the contract.
import type { Deps } from '../deps.ts';
import { areaError, areaOf } from './errors.ts';
import { healthHandlers } from './health.handlers.ts';
import type { HandlerFor, HandlerMap, OperationId } from './types.ts';

/** An operation whose issue has not landed: 501 in its area's error body. */
export function pending<K extends OperationId>(id: K): HandlerFor<K> {
  return (_c, ctx) => {
    throw areaError(areaOf(ctx.path), 'not_implemented', `${id} is not implemented yet`);
  };
}

export function handlers(deps: Deps): HandlerMap {
  return {
    ...healthHandlers(deps),
    loginPlatformUser: pending('loginPlatformUser'),
    registerClientUser: pending('registerClientUser'),
    createIntegration: pending('createIntegration'),
    updateIntegration: pending('updateIntegration'),
    createIntegrationUnscoped: pending('createIntegrationUnscoped'),
    updateIntegrationUnscoped: pending('updateIntegrationUnscoped'),
    listIntegrations: pending('listIntegrations'),
    getIntegration: pending('getIntegration'),
    deleteIntegration: pending('deleteIntegration'),
    testIntegration: pending('testIntegration'),
    listOrganisations: pending('listOrganisations'),
    getOrganisation: pending('getOrganisation'),
    getOrganisationStats: pending('getOrganisationStats'),
    listVisitors: pending('listVisitors'),
    getVisitor: pending('getVisitor'),
    listEvents: pending('listEvents'),
    listDeliveries: pending('listDeliveries'),
    getDelivery: pending('getDelivery'),
    retryDelivery: pending('retryDelivery'),
    listLearnEvents: pending('listLearnEvents'),
    identifyVisitor: pending('identifyVisitor'),
    recordViewEvent: pending('recordViewEvent'),
    recordViewEventPixel: pending('recordViewEventPixel'),
    recordUpdateCartEvent: pending('recordUpdateCartEvent'),
    recordRemoveFromCartEvent: pending('recordRemoveFromCartEvent'),
    recordCheckoutEvent: pending('recordCheckoutEvent'),
    recordBuyEvent: pending('recordBuyEvent'),
    recordProductViewEvent: pending('recordProductViewEvent'),
    recordCategoryViewEvent: pending('recordCategoryViewEvent'),
    getTrackerScript: pending('getTrackerScript'),
    submitLearningEvent: pending('submitLearningEvent'),
    registerAnalyticsUser: pending('registerAnalyticsUser'),
  };
}
