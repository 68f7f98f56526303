// The tracking calls as the browser tracker makes them (src/tracking/tracker/tracker.browser.ts),
// for a shop's server or an app: what the contract cannot say by itself.
// - The identify payload is base64url JSON in a path segment (docs/design.md,
//   Tracking API): encodeIdentifyPayload does the encoding, as the tracker does.
// - A visitor without a corex_id is sent as the literal path segment `null`:
//   the helpers take `corex_id` as optional (or null) and write that for you.
import type { FetchResponse } from 'openapi-fetch';
import type { Schemas, TrackwayClient, paths } from '../../generated/client.ts';

/** The fields of an identify call: email, phone, name, and the identity-verification hash. */
export type IdentifyFields = Schemas['IdentifyPayload'];

const IDENTIFY_FIELDS = ['email', 'phone', 'name', 'hash'] as const;

/**
 * The `payload` segment of `identifyVisitor`: the fields as UTF-8 JSON in
 * base64url without padding, exactly as the tracker encodes them (values
 * trimmed, empty ones and unknown keys left out). Throws a TypeError when no
 * field is left.
 */
export function encodeIdentifyPayload(fields: IdentifyFields): string {
  const payload: Record<string, string> = {};
  for (const k of IDENTIFY_FIELDS) {
    const v: unknown = (fields as Record<string, unknown>)[k];
    if ((typeof v === 'string' && v.trim() !== '') || typeof v === 'number') payload[k] = String(v).trim();
  }
  if (Object.keys(payload).length === 0) throw new TypeError('an identify needs an email, a phone, a name or a hash');
  let bin = '';
  for (const b of new TextEncoder().encode(JSON.stringify(payload))) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The ids of one visitor of one organisation, as the tracker keeps them (`trackway.ids()` in a browser). */
export interface VisitorIds {
  org_id: number;
  /** the session's id */
  roaming_id: string;
  /** the browser's id */
  core_id: string;
  /** the shop's own customer id, when it has one: left out (or null) otherwise */
  corex_id?: string | null;
}

/** The value the path takes when there is no corex_id. */
export const NO_COREX_ID = 'null';

export interface EventPathParams {
  org_id: number;
  roaming_id: string;
  core_id: string;
  corex_id: string;
}

/** The path parameters of an event call (`recordProductViewEvent` and the others): a missing corex_id becomes `null`. */
export function eventPathParams(visitor: VisitorIds): EventPathParams {
  const corex = visitor.corex_id;
  return {
    org_id: visitor.org_id,
    roaming_id: visitor.roaming_id,
    core_id: visitor.core_id,
    corex_id: corex == null || corex === '' ? NO_COREX_ID : corex,
  };
}

/** The path parameters of `identifyVisitor`: the visitor's ids and the encoded payload. */
export function identifyPathParams(visitor: VisitorIds, fields: IdentifyFields) {
  return { org_id: visitor.org_id, roaming_id: visitor.roaming_id, core_id: visitor.core_id, payload: encodeIdentifyPayload(fields) };
}

const EVENT_PREFIX = '/jsv1/{org_id}/{roaming_id}/{core_id}/{corex_id}/event/';
type EventPath = Extract<keyof paths, `${typeof EVENT_PREFIX}${string}`>;
/** The events a visitor can send: `view`, `productview`, `updatecart`, and so on. */
export type TrackedEventName = EventPath extends `${typeof EVENT_PREFIX}${infer N}` ? N : never;
type EventOperation<N extends TrackedEventName> = paths[`${typeof EVENT_PREFIX}${N}`]['post'];
/** The JSON body of an event, as the contract describes it. */
export type EventBody<N extends TrackedEventName> = NonNullable<EventOperation<N>['requestBody']>['content']['application/json'];
export type EventResult<N extends TrackedEventName> = FetchResponse<EventOperation<N>, { body: EventBody<N> }, `${string}/${string}`>;
type IdentifyOperation = paths['/jsv1/identify/{org_id}/{roaming_id}/{core_id}/{payload}']['get'];
export type IdentifyResult = FetchResponse<IdentifyOperation, object, `${string}/${string}`>;

export interface VisitorCalls {
  readonly ids: Readonly<VisitorIds>;
  /** POSTs one event for this visitor (202 `{status: "accepted"}` once stored). */
  track<N extends TrackedEventName>(name: N, body: EventBody<N>): Promise<EventResult<N>>;
  /** Identifies this visitor (200 `{core_id}`): links it to the email or phone given. */
  identify(fields: IdentifyFields): Promise<IdentifyResult>;
}

/** The tracker's two calls for one visitor, made through the client (from a server, an app or a test). */
export function visitorCalls(client: TrackwayClient, visitor: VisitorIds): VisitorCalls {
  const ids = Object.freeze({ ...visitor });
  return {
    ids,
    track(name, body) {
      // the path is one of the event paths for every N; openapi-fetch types one path at a time
      const path = `${EVENT_PREFIX}${name}` as `${typeof EVENT_PREFIX}productview`;
      return client.POST(path, { params: { path: eventPathParams(ids) }, body: body as EventBody<'productview'> }) as Promise<
        EventResult<typeof name>
      >;
    },
    identify(fields) {
      return client.GET('/jsv1/identify/{org_id}/{roaming_id}/{core_id}/{payload}', { params: { path: identifyPathParams(ids, fields) } });
    },
  };
}
