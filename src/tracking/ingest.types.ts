// What the tracking handlers hand to the ingest path.
import type { Location } from '../db/schema.ts';
import type { IdentifyClaim } from '../identity/verification.rules.ts';
import type { TrackedEventName } from '../webhooks/payloads/event-exported.payload.ts';
import type { BotReason } from './bots.rules.ts';
import type { OrgId } from '../db/tenancy.ts';

/** The parts of the organisation's policy (src/platform/organisation-directory.service.ts) the batch applies. */
export interface IngestPolicy {
  identityVerification: 'optional' | 'required';
  /** false: event exports only for contacts whose link to the event's visitor is verified */
  exportUnverified: boolean;
  /** an http(s) URL whose host is one of the organisation's allowed domains */
  allowsUrl(url: string): boolean;
  /** the organisation's suppression list is not empty: the batch checks its items against it (src/privacy/ingest-privacy.service.ts) */
  suppressing: boolean;
}

export interface VisitorContext {
  orgId: OrgId;
  roamingId: string;
  coreId: string;
  receivedAt: Date;
  userAgent: string | null;
  location: Location | null;
  policy: IngestPolicy;
  /**
   * the request carried `Sec-GPC: 1` and the organisation honours it
   * (honor_gpc): nothing of it may identify or be linked to a person
   * (src/privacy/ingest-privacy.service.ts); absent: false
   */
  gpc?: boolean;
  /** from a known bot, and the organisation keeps them out (filter_bots): stored nowhere, only counted (src/tracking/bots.rules.ts); absent: not a bot */
  bot?: BotReason;
}

export interface EventItem extends VisitorContext {
  kind: 'event';
  corexId: string | null;
  name: TrackedEventName;
  body: Record<string, unknown>;
}

export interface IdentifyItem extends VisitorContext {
  kind: 'identify';
  /** what to link, checked against the organisation's identity verification */
  claim: IdentifyClaim;
}

export type IngestItem = EventItem | IdentifyItem;

/**
 * An event item, field by field in one order (identifyItem's first ten are
 * the same). Items are made here and nowhere else, and never with spread
 * syntax: in V8 (Node 20) an object literal that spreads another and adds a
 * property (`{ ...visit, kind: 'event' }`) gets a hidden class of its own,
 * one per object, so every property read of the batch code (the privacy
 * screen, the plain batch, identity, fan-out: each reads every item) went
 * through the megamorphic stub cache, and each item left a map behind for
 * the garbage collector (docs/profiles/hidden-classes.md).
 */
export function eventItem(v: VisitorContext, corexId: string | null, name: TrackedEventName, body: Record<string, unknown>): EventItem {
  return {
    kind: 'event',
    orgId: v.orgId,
    roamingId: v.roamingId,
    coreId: v.coreId,
    receivedAt: v.receivedAt,
    userAgent: v.userAgent,
    location: v.location,
    policy: v.policy,
    gpc: v.gpc === true,
    bot: v.bot,
    corexId,
    name,
    body,
  };
}

/** An identify item (eventItem says why it is made here, field by field). */
export function identifyItem(v: VisitorContext, claim: IdentifyClaim): IdentifyItem {
  return {
    kind: 'identify',
    orgId: v.orgId,
    roamingId: v.roamingId,
    coreId: v.coreId,
    receivedAt: v.receivedAt,
    userAgent: v.userAgent,
    location: v.location,
    policy: v.policy,
    gpc: v.gpc === true,
    bot: v.bot,
    claim,
  };
}
