// enforce_origin (docs/design.md "Trust"): a tracking request must come from
// one of the organisation's allowed domains, by its Origin header or, when
// it has none (an image pixel, a same-origin GET), the host of its Referer.
// A request with neither, or with `Origin: null` (sandboxed frames, file:),
// is refused. Checked before anything is stored.
import { trackingError } from '../http/errors.ts';
import { urlHost } from '../identity/url-policy.rules.ts';
import type { OrganisationPolicy } from '../platform/organisation-directory.service.ts';

type OriginPolicy = Pick<OrganisationPolicy, 'orgId' | 'enforceOrigin' | 'allowsHost'>;

/** Whether the request's origin (or, without one, its Referer) is allowed; refuses nothing itself. */
export function originAllowed(policy: OriginPolicy, origin: string, referer: string): boolean {
  if (!policy.enforceOrigin) return true;
  const source = origin || referer;
  const host = source ? urlHost(source) : null;
  return host !== null && policy.allowsHost(host);
}

/** Throws 403 origin_not_allowed unless originAllowed. */
export function checkOrigin(policy: OriginPolicy, origin: string, referer: string): void {
  if (originAllowed(policy, origin, referer)) return;
  const source = origin || referer;
  const host = source ? urlHost(source) : null;
  const what = !source ? 'The request has no Origin or Referer header' : `The origin ${host ?? JSON.stringify(source.slice(0, 100))} is not one of`;
  throw trackingError(
    403,
    'origin_not_allowed',
    !source
      ? `${what}; organisation ${policy.orgId} accepts only requests from its allowed domains`
      : `${what} the allowed domains of organisation ${policy.orgId}`,
  );
}
