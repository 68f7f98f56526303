// enforce_origin (docs/design.md "Trust"): a tracking request must come from
// one of the organisation's allowed domains, by its Origin header or, when
// it has none (an image pixel, a same-origin GET), the host of its Referer.
// A request with neither, or with `Origin: null` (sandboxed frames, file:),
// is refused. Checked before anything is stored.
import { trackingError } from '../http/errors.ts';
import { urlHost } from '../identity/url-policy.ts';
import type { OrganisationPolicy } from '../platform/organisation-directory.ts';

export function checkOrigin(policy: Pick<OrganisationPolicy, 'orgId' | 'enforceOrigin' | 'allowsHost'>, origin: string, referer: string): void {
  if (!policy.enforceOrigin) return;
  const source = origin || referer;
  const host = source ? urlHost(source) : null;
  if (host !== null && policy.allowsHost(host)) return;
  const what = !source ? 'The request has no Origin or Referer header' : `The origin ${host ?? JSON.stringify(source.slice(0, 100))} is not one of`;
  throw trackingError(
    403,
    'origin_not_allowed',
    !source
      ? `${what}; organisation ${policy.orgId} accepts only requests from its allowed domains`
      : `${what} the allowed domains of organisation ${policy.orgId}`,
  );
}
