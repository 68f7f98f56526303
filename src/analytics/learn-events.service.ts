// Learning events (`submitLearningEvent`): the organisation comes from its token,
// defaults are applied, and the event is stored with the time received.
// Platform users list them per organisation (newest first, cursor-paginated).
import type { Deps } from '../deps.ts';
import { analyticsFailure } from '../http/errors.ts';
import { cursorNumber, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { TrafficLimits } from '../http/traffic-limits.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.service.ts';
import { resolveOrgToken } from '../platform/organisations.service.ts';
import { invalidInput } from './input.rules.ts';
import { insertLearnEvent, listLearnEvents as listRows } from './learn-events.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

export const DEFAULT_EVENT_CATEGORY = 'EXTERNAL';
export const DEFAULT_LANG = 'en';

export function unknownOrgToken() {
  return analyticsFailure(400, 5104, 'Invalid org_token: please provide the correct organisation token');
}

/** An absolute URL (scheme and all), as `new URL` reads it. */
function isAbsoluteUrl(u: string): boolean {
  try {
    new URL(u);
    return true;
  } catch {
    return false;
  }
}

/** The request body; the generated type marks defaulted fields as always present, but clients may omit them. */
export type LearnEventInput = Omit<Schemas['LearnEventRequest'], 'eventCategory' | 'lang'> & {
  eventCategory?: string;
  lang?: string;
};

/** Validates what the contract cannot, resolves the organisation, stores the event. */
export async function submitLearningEvent(
  deps: Pick<Deps, 'db'>,
  body: LearnEventInput,
  limits?: Pick<TrafficLimits, 'org'>,
  cost = 1,
): Promise<void> {
  const eventVal = body.eventVal as unknown;
  if (typeof eventVal !== 'string' && (typeof eventVal !== 'object' || eventVal === null || Array.isArray(eventVal))) {
    throw invalidInput('/eventVal', 'must be a string or an object');
  }
  const eventCategory = body.eventCategory ?? DEFAULT_EVENT_CATEGORY;
  const lang = body.lang ?? DEFAULT_LANG;
  const u = body.u ?? null;
  if (u !== null) {
    if (!isAbsoluteUrl(u)) throw invalidInput('/u', 'must be an absolute URL');
  }

  const orgId = await resolveOrgToken(deps.db, body.org_token);
  if (orgId === undefined) throw unknownOrgToken();
  limits?.org(orgId, cost);
  await insertLearnEvent(deps.db, {
    orgId,
    eventName: body.eventName,
    eventVal: eventVal as string | Record<string, unknown>,
    eventCategory,
    u,
    lang,
  });
}

export interface ListQuery {
  cursor?: string;
  limit?: number;
}

/** One page of an organisation assigned to the caller, newest first. */
export async function listLearnEvents(
  deps: Pick<Deps, 'db'>,
  principal: Principal,
  orgId: OrgId,
  query: ListQuery,
): Promise<Schemas['LearnEventList']> {
  await requireOrganisation(deps.db, principal, orgId);
  const limit = pageLimit(query.limit);
  const filters = { org_id: orgId };
  const pos = decodeCursor(query.cursor, filters);
  const beforeId = pos ? cursorNumber(pos, 'id') : undefined;
  const rows = await listRows(deps.db, orgId, { beforeId, limit });
  const page = toPage(rows, limit, (last) => ({ id: last.id }), filters);
  return {
    items: page.rows.map((e) => ({
      id: e.id,
      event_name: e.event_name,
      event_val: e.event_val,
      event_category: e.event_category,
      u: e.u,
      lang: e.lang,
      received_at: e.received_at.toISOString(),
    })),
    next_cursor: page.next_cursor,
  };
}
