// The admission of a tracking request (an event, the view pixel, identify):
// ONE ordered list of checks (CHECKS below) that both transports run — the
// Koa handlers (tracking.handlers.ts) and the fast path (src/http/fast-path.ts
// through fast-ingest.handlers.ts) — with ONE set of limiters per process
// (deps.trackingLimits, made once by buildDeps in src/server.ts).
//
// Each check decides without charging anything. The order is the order in
// which the contract's errors have always come: validation (the identify
// payload decodes), then — after the organisation's cached policy is read —
// address limit, unknown organisation, organisation limit, origin,
// verification, identify budget. From the policy read on nothing awaits, so
// what the checks found still holds when the limits are charged.
//
// - admit (the Koa path): a refused request throws the first refusing
//   check's ApiError, after charging the limits of the checks it passed
//   (what a refused request has always spent); an admitted one charges every
//   limit once.
// - tryAdmit (the fast path): null when any check would refuse, with nothing
//   charged nor counted, so that the Koa path, handed the request, charges
//   and refuses it exactly as it would have alone; otherwise charged as
//   admit charges.
// - submit: hands the admitted item to ingest and resolves once it is
//   committed (an identify's identity is then free to repeat for a while).
import type { Deps } from '../deps.ts';
import { trackingError } from '../http/errors.ts';
import { identityKey, requestCost, type TrafficLimits } from '../http/traffic-limits.ts';
import { type IdentifyClaim, verifyIdentify } from '../identity/verification.rules.ts';
import { NOT_CACHED, type OrganisationPolicy } from '../platform/organisation-directory.service.ts';
import { decodeIdentifyPayload, type IdentifyPayload } from './identify-payload.rules.ts';
import { eventItem, identifyItem, type IngestItem, type VisitorContext } from './ingest.types.ts';
import { TRACKING_OPERATIONS, type TrackingAction, type TrackingOperation } from './operations.rules.ts';
import { checkOrigin, originAllowed } from './origin.rules.ts';
import { botReason } from './bots.rules.ts';
import type { OrgId } from '../db/tenancy.ts';

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
  /** the tracker reported navigator.webdriver (`?webdriver=1`, src/tracking/bots.rules.ts); absent: false */
  webdriver?: boolean;
}

/** The path parameters of the tracking operations (each operation's generated PathOf fits it). */
export interface TrackingIds {
  org_id: OrgId;
  roaming_id: string;
  core_id: string;
  /** the events' (the literal `null` means none) */
  corex_id?: string;
  /** identify's encoded IdentifyPayload */
  payload?: string;
}

/** One request on its way through the checks: what they find is kept on it. */
export class Admission {
  readonly cost: number;
  /** the organisation's policy (read before the checks that need it) */
  policy: OrganisationPolicy | undefined = undefined;
  /** identify: the decoded payload (validation), what it links (verification) and its identity (its budget: an identityKey) */
  payload: IdentifyPayload | undefined = undefined;
  claim: IdentifyClaim | undefined = undefined;
  identity: string | undefined = undefined;
  /** the refusal a check found (validation, verification), thrown by admit */
  error: unknown = undefined;
  /** the item to store, once admitted */
  item: IngestItem | undefined = undefined;

  constructor(
    readonly client: TrackingClient,
    readonly ids: TrackingIds,
    readonly action: TrackingAction,
    readonly body: Record<string, unknown> | undefined,
  ) {
    this.cost = requestCost(client.bodyChars);
  }
}

/** One check of the admission sequence. */
interface Check {
  readonly name: string;
  /** whether the request passes; decides without charging or counting anything */
  passes(limits: TrafficLimits, a: Admission): boolean;
  /** a limit: charges it once the request is admitted (charging a limit that does not admit throws its 429) */
  charge?(limits: TrafficLimits, a: Admission): void;
  /** throws the refusal; a limit without one refuses by charging */
  refuse?(a: Admission): never;
}

const rethrow = (a: Admission): never => {
  throw a.error;
};

/**
 * The admission sequence. CHECKS[0] runs before the policy is read, the rest
 * after it without awaiting. The limits are the process's one set
 * (`deps.trackingLimits`, made by buildDeps: per client address, per
 * organisation once it is known to exist, each request weighted by its body
 * size, and identify's budget; src/http/traffic-limits.ts).
 */
const CHECKS: readonly Check[] = [
  {
    name: 'validation',
    passes(_limits, a) {
      if (a.action !== 'identify') return true;
      try {
        a.payload = decodeIdentifyPayload(a.ids.payload!);
        return true;
      } catch (e) {
        a.error = e;
        return false;
      }
    },
    refuse: rethrow,
  },
  {
    name: 'address limit',
    passes: (limits, a) => limits.allowsIp(a.client.ip, a.cost),
    charge: (limits, a) => limits.ip(a.client.ip, a.cost),
  },
  {
    name: 'organisation',
    passes: (_limits, a) => a.policy?.active === true,
    refuse(a) {
      throw trackingError(404, 'unknown_organisation', `Organisation ${a.ids.org_id} does not exist or is not active`);
    },
  },
  {
    name: 'organisation limit',
    passes: (limits, a) => limits.allowsOrg(a.ids.org_id, a.cost),
    charge: (limits, a) => limits.org(a.ids.org_id, a.cost),
  },
  {
    name: 'origin',
    passes: (_limits, a) => originAllowed(a.policy!, a.client.origin, a.client.referer),
    refuse(a) {
      checkOrigin(a.policy!, a.client.origin, a.client.referer);
      throw new Error('unreachable: the origin check refused');
    },
  },
  {
    name: 'verification',
    passes(_limits, a) {
      if (a.action !== 'identify') return true;
      try {
        // identity verification: refused (403) before anything is stored
        a.claim = verifyIdentify(a.policy!, a.payload!);
      } catch (e) {
        a.error = e;
        return false;
      }
      // a new identity spends the address's identify budget; repeating one is free
      a.identity = identityKey(`${a.ids.org_id}\u0000${a.ids.core_id}\u0000${a.ids.payload}`);
      return true;
    },
    refuse: rethrow,
  },
  {
    name: 'identify budget',
    passes: (limits, a) => a.identity === undefined || limits.allowsIdentify(a.client.ip, a.identity),
    charge(limits, a) {
      if (a.identity !== undefined) limits.identify(a.client.ip, a.identity);
    },
  },
];

/** The index of the first check after the policy's that refuses the request; -1 when none does. Charges nothing. */
function examineWithPolicy(limits: TrafficLimits, a: Admission, policy: OrganisationPolicy | undefined): number {
  a.policy = policy;
  for (let i = 1; i < CHECKS.length; i++) if (!CHECKS[i]!.passes(limits, a)) return i;
  return -1;
}

/** The index of the first check that refuses the request; -1 when none does. Charges nothing. */
async function examine(deps: Deps, a: Admission): Promise<number> {
  const limits = deps.trackingLimits;
  if (!CHECKS[0]!.passes(limits, a)) return 0;
  // one cached lookup: active, and the trust policy (no database round trip of its own)
  return examineWithPolicy(limits, a, await deps.organisations.policy(a.ids.org_id));
}

/**
 * examine without waiting, when the organisation's policy is already cached
 * (almost every request); NOT_CACHED when it is not, and examine is the way.
 */
function examineNow(deps: Deps, a: Admission): number | typeof NOT_CACHED {
  const policy = deps.organisations.cachedPolicy(a.ids.org_id);
  if (policy === NOT_CACHED) return NOT_CACHED;
  const limits = deps.trackingLimits;
  if (!CHECKS[0]!.passes(limits, a)) return 0;
  return examineWithPolicy(limits, a, policy);
}

/** Charges the limits of the checks before `end` (all of them: CHECKS.length). */
function charge(limits: TrafficLimits, a: Admission, end: number): void {
  for (let i = 0; i < end; i++) CHECKS[i]!.charge?.(limits, a);
}

/** The item of an admitted request (made by ingest.types.ts's constructors: one hidden class per kind). */
function itemOf(deps: Deps, a: Admission): IngestItem {
  const { client, ids } = a;
  const policy = a.policy!;
  const ua = client.userAgent;
  const visit: VisitorContext = {
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
  if (a.action === 'identify') return identifyItem(visit, a.claim!);
  const corexId = ids.corex_id === undefined || ids.corex_id === 'null' ? null : ids.corex_id;
  return eventItem(visit, corexId, a.action, a.body!);
}

/** The Koa path: the admitted request, charged; a refusal throws (see above). */
export async function admit(
  deps: Deps,
  op: TrackingOperation,
  client: TrackingClient,
  ids: TrackingIds,
  body?: Record<string, unknown>,
): Promise<Admission> {
  const a = new Admission(client, ids, TRACKING_OPERATIONS[op].action, body);
  const limits = deps.trackingLimits;
  const refused = await examine(deps, a);
  if (refused >= 0) {
    // what the checks it passed have always charged, then its refusal
    charge(limits, a, refused);
    const check = CHECKS[refused]!;
    if (check.refuse) check.refuse(a);
    check.charge!(limits, a);
    throw new Error(`admission: the ${check.name} check refused, but its limit admitted`);
  }
  charge(limits, a, CHECKS.length);
  a.item = itemOf(deps, a);
  return a;
}

/**
 * The fast path: the admitted request, charged, or null when anything would
 * refuse it (nothing charged); at once when the organisation's policy is
 * cached, else once it is read.
 */
export function tryAdmit(
  deps: Deps,
  op: TrackingOperation,
  client: TrackingClient,
  ids: TrackingIds,
  body?: Record<string, unknown>,
): Admission | null | Promise<Admission | null> {
  const a = new Admission(client, ids, TRACKING_OPERATIONS[op].action, body);
  // with the policy cached, decided here and now: no promise, no turn of the microtask queue
  const now = examineNow(deps, a);
  if (now !== NOT_CACHED) return admitted(deps, a, now);
  return examine(deps, a).then((refused) => admitted(deps, a, refused));
}

/** tryAdmit's end: the admitted request charged and its item made, or null when a check refused it. */
function admitted(deps: Deps, a: Admission, refused: number): Admission | null {
  if (refused >= 0) return null;
  charge(deps.trackingLimits, a, CHECKS.length);
  a.item = itemOf(deps, a);
  return a;
}

/** Stores the admitted request's item; resolves once it is committed. */
export function submit(deps: Deps, a: Admission): Promise<void> {
  // an event's promise is ingest's own (no await of its own on the hot path)
  const committed = deps.ingest.submit(a.item!);
  const identity = a.identity;
  return identity === undefined ? committed : committed.then(() => deps.trackingLimits.identified(identity));
}
