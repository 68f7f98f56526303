// The rules of the tracking requests (events, the view pixel, identify),
// shared by the Koa handlers (tracking.handlers.ts) and the fast path
// (src/http/fast-path.ts), so both apply the same limits, organisation and
// origin checks, identity verification and geo-location, with ONE set of
// limiters per process.
//
// - recordEvent / identify: the Koa path; a refusal throws its ApiError,
//   in the order the contract's errors have always come (address limit,
//   unknown organisation, organisation limit, origin, verification,
//   identify limit).
// - prepareEvent / prepareIdentify: the fast path; everything that could
//   refuse is checked first WITHOUT charging a limit or counting a refusal.
//   null means "something would refuse: hand the request to the Koa path",
//   which then charges and refuses it exactly as it would have alone.
//   Otherwise the limits are charged at once (no await in between, so what
//   was checked still holds) and the returned function submits the item.
import type { Deps } from '../deps.ts';
import { trackingError } from '../http/errors.ts';
import { createTrafficLimits, requestCost, type TrafficLimits } from '../http/traffic-limits.ts';
import type { TrackedEventName } from '../webhooks/payloads/event-exported.ts';
import { verifyIdentify } from '../identity/verification.ts';
import type { OrganisationPolicy } from '../platform/organisation-directory.ts';
import { decodeIdentifyPayload } from './identify-payload.ts';
import { checkOrigin } from './origin.ts';
import { botReason } from './bots.ts';

/** What the rules need of the HTTP request (as Koa's ctx.ip / ctx.get() give it). */
export interface TrackingClient {
  ip: string;
  origin: string;
  referer: string;
  userAgent: string;
  /** length of the decoded body text (0 for GET): the limits weigh requests by it */
  bodyChars: number;
  /** the request carried `Sec-GPC: 1` (Global Privacy Control; any other value is no signal) */
  gpc: boolean;
  /** the tracker reported navigator.webdriver (`?webdriver=1`, src/tracking/bots.ts); absent: false */
  webdriver?: boolean;
}

export interface PathIds {
  org_id: number;
  roaming_id: string;
  core_id: string;
  corex_id?: string;
}

export interface TrackingService {
  recordEvent(client: TrackingClient, ids: PathIds, name: TrackedEventName, body: Record<string, unknown>): Promise<void>;
  identify(client: TrackingClient, ids: PathIds & { payload: string }): Promise<void>;
  prepareEvent(client: TrackingClient, ids: PathIds, name: TrackedEventName, body: Record<string, unknown>): Promise<(() => Promise<void>) | null>;
  prepareIdentify(client: TrackingClient, ids: PathIds & { payload: string }): Promise<(() => Promise<void>) | null>;
}

const services = new WeakMap<Deps, TrackingService>();

/** The process's tracking service for these deps (one set of limiters, whichever path asks). */
export function trackingService(deps: Deps): TrackingService {
  let s = services.get(deps);
  if (!s) services.set(deps, (s = createTrackingService(deps)));
  return s;
}

function unknownOrganisation(orgId: number) {
  return trackingError(404, 'unknown_organisation', `Organisation ${orgId} does not exist or is not active`);
}

function createTrackingService(deps: Deps): TrackingService {
  // tracking limits: per client address first, per organisation once it is known to exist,
  // each request weighted by its body size (src/http/traffic-limits.ts)
  const limits: TrafficLimits = createTrafficLimits('tracking', deps.config.trackingLimits, deps.metrics.trackingRefused);

  function base(client: TrackingClient, ids: PathIds, policy: OrganisationPolicy) {
    const ua = client.userAgent;
    return {
      orgId: ids.org_id,
      roamingId: ids.roaming_id,
      coreId: ids.core_id,
      receivedAt: new Date(),
      userAgent: ua ? ua.slice(0, 1024) : null,
      location: deps.geo.locate(client.ip),
      policy,
      // honoured under honor_gpc: the batch stores nothing of it that identifies or links (src/privacy/ingest-privacy.service.ts)
      gpc: client.gpc && policy.honorGpc,
      bot: botReason(client, policy),
    };
  }

  async function visitorContext(client: TrackingClient, ids: PathIds) {
    const cost = requestCost(client.bodyChars);
    limits.ip(client.ip, cost);
    // one cached lookup: active, and the trust policy (no database round trip of its own)
    const policy = await deps.organisations.policy(ids.org_id);
    if (!policy?.active) throw unknownOrganisation(ids.org_id);
    limits.org(ids.org_id, cost);
    checkOrigin(policy, client.origin, client.referer);
    return base(client, ids, policy);
  }

  /** The policy when nothing up to the origin check would refuse; null otherwise. Charges nothing. */
  async function admissible(client: TrackingClient, ids: PathIds): Promise<OrganisationPolicy | null> {
    const policy = await deps.organisations.policy(ids.org_id);
    if (!policy?.active) return null;
    try {
      checkOrigin(policy, client.origin, client.referer);
    } catch {
      return null;
    }
    return policy;
  }

  const corexOf = (ids: PathIds) => (ids.corex_id === undefined || ids.corex_id === 'null' ? null : ids.corex_id);
  const identityOf = (ids: PathIds & { payload: string }) => `${ids.org_id}\u0000${ids.core_id}\u0000${ids.payload}`;

  return {
    async recordEvent(client, ids, name, body) {
      const b = await visitorContext(client, ids);
      await deps.ingest.submit({ ...b, kind: 'event', corexId: corexOf(ids), name, body });
    },

    async identify(client, ids) {
      const payload = decodeIdentifyPayload(ids.payload);
      const b = await visitorContext(client, ids);
      // identity verification: refused (403) before anything is stored
      const claim = verifyIdentify(b.policy, payload);
      // a new identity spends the address's identify budget; repeating one is free
      const identity = identityOf(ids);
      limits.identify(client.ip, identity);
      await deps.ingest.submit({ ...b, kind: 'identify', claim });
      limits.identified(identity);
    },

    async prepareEvent(client, ids, name, body) {
      const policy = await admissible(client, ids);
      const cost = requestCost(client.bodyChars);
      if (!policy || !limits.admits(client.ip, ids.org_id, cost)) return null;
      limits.ip(client.ip, cost);
      limits.org(ids.org_id, cost);
      const item = { ...base(client, ids, policy), kind: 'event' as const, corexId: corexOf(ids), name, body };
      return () => deps.ingest.submit(item);
    },

    async prepareIdentify(client, ids) {
      let payload;
      try {
        payload = decodeIdentifyPayload(ids.payload);
      } catch {
        return null;
      }
      const policy = await admissible(client, ids);
      if (!policy) return null;
      let claim;
      try {
        claim = verifyIdentify(policy, payload);
      } catch {
        return null;
      }
      const identity = identityOf(ids);
      const cost = requestCost(client.bodyChars);
      if (!limits.admits(client.ip, ids.org_id, cost, identity)) return null;
      limits.ip(client.ip, cost);
      limits.org(ids.org_id, cost);
      limits.identify(client.ip, identity);
      const item = { ...base(client, ids, policy), kind: 'identify' as const, claim };
      return async () => {
        await deps.ingest.submit(item);
        limits.identified(identity);
      };
    },
  };
}
