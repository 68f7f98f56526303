// `trackway/client`: the official TypeScript client (README, "The TypeScript
// client"). Built into dist/client by scripts/build.ts.
// - createTrackwayClient: generated from the contract (generated/client.ts),
//   an openapi-fetch client typed end to end, with a method per operationId;
// - what the contract cannot express, by hand: the identify payload's
//   encoding and the `null` corex_id (tracking.ts), webhook signature
//   verification and test deliveries on the receiving side (webhooks.ts).
export {
  type OperationId,
  type Schemas,
  type TrackwayClient,
  type TrackwayClientOptions,
  type TrackwayOperations,
  type components,
  createTrackwayClient,
  operations,
  type paths,
  type webhooks,
} from '../../generated/client.ts';
export {
  type EventBody,
  type EventPathParams,
  type EventResult,
  type IdentifyFields,
  type IdentifyResult,
  NO_COREX_ID,
  type TrackedEventName,
  type VisitorCalls,
  type VisitorIds,
  encodeIdentifyPayload,
  eventPathParams,
  identifyPathParams,
  visitorCalls,
} from './tracking.ts';
export {
  type RawBody,
  TEST_DELIVERY_HEADER,
  type VerifyOptions,
  type WebhookHeaders,
  type WebhookNotification,
  WebhookVerificationError,
  type WebhookVerificationReason,
  isTestDelivery,
  verifyWebhook,
} from './webhooks.ts';
