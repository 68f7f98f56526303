// Organisations as other areas need them on their hot paths: is this id an
// active organisation, and what is its trust policy (allowed domains, origin
// check, identity verification and its secret) and its privacy policy
// (Global Privacy Control, whether it suppresses anyone)? Cached per process, so the
// tracking path makes no database round trip of its own for them: an entry
// lives 5 s (unknown ids too, so a flood of calls for a bogus id reaches the
// database at most once per interval); a change drops it at once in this
// process (invalidate) and, through the `trackway_organisations` NOTIFY
// channel (src/webhooks/runtime.worker.ts), in every other one. Whether the
// organisation suppresses anyone is privacy's to say (its table): the
// directory is given that check (src/privacy/suppression.service.ts).
import type { Database } from '../db/database.ts';
import { defaultAllowedDomains, hostAllowed, urlMatcher } from '../identity/url-policy.rules.ts';
import { findPolicyRow, type PolicyRow } from './organisation-settings.repository.ts';
import type { Cipher } from './secrets.service.ts';
import type { OrgId } from '../db/tenancy.ts';

export interface OrganisationPolicy {
  orgId: OrgId;
  active: boolean;
  /** the effective list: allowed_domains, or the organisation's own domain */
  allowedDomains: readonly string[];
  enforceOrigin: boolean;
  identityVerification: 'optional' | 'required';
  /** false: event exports only for contacts whose link to the event's visitor is verified */
  exportUnverified: boolean;
  /** the key of identify hashes; null while the organisation has none (no hash can match) */
  identitySecret: string | null;
  /** honour `Sec-GPC: 1` (honor_gpc): such a request stores no contact, causes no notification, links no event */
  honorGpc: boolean;
  /** keep known bots out (filter_bots): their requests are answered but store nothing (src/tracking/bots.rules.ts) */
  filterBots: boolean;
  /**
   * the organisation's suppression list is not empty: its identifies must be
   * checked against it (src/privacy/suppression.repository.ts suppressedAmong);
   * false, they need no lookup
   */
  suppressing: boolean;
  /** an http(s) URL whose host is allowed */
  allowsUrl(url: string): boolean;
  /** a host (lower-case, no trailing dot, no port) that is allowed */
  allowsHost(host: string): boolean;
}

export interface OrganisationDirectory {
  isActive(orgId: OrgId): Promise<boolean>;
  /** the policy of an existing organisation (active or not); undefined when there is none */
  policy(orgId: OrgId): Promise<OrganisationPolicy | undefined>;
  /**
   * The policy as `policy` would resolve it, when the cache already holds it
   * resolved (undefined: no such organisation); NOT_CACHED otherwise, and
   * `policy` is then the way. Lets the tracking fast path admit a request
   * without a promise to wait for.
   */
  cachedPolicy(orgId: OrgId): OrganisationPolicy | undefined | typeof NOT_CACHED;
  invalidate(orgId: OrgId): void;
  /** drops every entry (after notifications may have been missed) */
  clear(): void;
}

/** The effective allowed_domains of a stored row. */
export function effectiveAllowedDomains(row: Pick<PolicyRow, 'allowed_domains' | 'domain_key'>): string[] {
  return row.allowed_domains && row.allowed_domains.length > 0 ? row.allowed_domains : defaultAllowedDomains(row.domain_key);
}

/** Whether an organisation's suppression list holds anything (privacy's answer). */
export type SuppressionCheck = (orgId: OrgId) => Promise<boolean>;

export function policyOf(row: PolicyRow, suppressing: boolean, cipher: Cipher): OrganisationPolicy {
  const allowedDomains = effectiveAllowedDomains(row);
  let identitySecret: string | null = null;
  if (row.identity_secret_enc) {
    try {
      identitySecret = cipher.decrypt(row.identity_secret_enc);
    } catch {
      // sealed with another TRACKWAY_SECRET_KEY: no hash can match until it is rotated
      identitySecret = null;
    }
  }
  const allowsUrl = urlMatcher(allowedDomains);
  return {
    orgId: row.id,
    active: row.is_active,
    allowedDomains,
    enforceOrigin: row.enforce_origin,
    identityVerification: row.identity_verification,
    exportUnverified: row.export_unverified,
    identitySecret,
    honorGpc: row.honor_gpc,
    suppressing,
    filterBots: row.filter_bots,
    allowsUrl,
    allowsHost: (host) => hostAllowed(host, allowedDomains),
  };
}

/** cachedPolicy's answer when the cache has no resolved policy for the organisation */
export const NOT_CACHED: unique symbol = Symbol('not cached');

interface Entry {
  until: number;
  policy: Promise<OrganisationPolicy | undefined>;
  /** what `policy` resolved to, once it has (NOT_CACHED until then) */
  settled: OrganisationPolicy | undefined | typeof NOT_CACHED;
}

export function createOrganisationDirectory(db: Database, cipher: Cipher, suppressing: SuppressionCheck, ttlMs = 5_000): OrganisationDirectory {
  const entries = new Map<OrgId, Entry>();
  const policy = (orgId: OrgId) => {
    const now = Date.now();
    const hit = entries.get(orgId);
    if (hit && hit.until > now) return hit.policy;
    if (entries.size > 100_000) entries.clear(); // bound memory under id scans
    const entry: Entry = {
      until: now + ttlMs,
      // two statements at once, each naming the organisation (one shard each under Citus)
      policy: Promise.all([findPolicyRow(db, orgId), suppressing(orgId)]).then(([row, s]) => {
        const p = row ? policyOf(row, s, cipher) : undefined;
        entry.settled = p;
        return p;
      }),
      settled: NOT_CACHED,
    };
    entry.policy.catch(() => {
      if (entries.get(orgId) === entry) entries.delete(orgId);
    });
    entries.set(orgId, entry);
    return entry.policy;
  };
  return {
    policy,
    cachedPolicy(orgId) {
      const hit = entries.get(orgId);
      return hit && hit.until > Date.now() ? hit.settled : NOT_CACHED;
    },
    async isActive(orgId) {
      return (await policy(orgId))?.active === true;
    },
    invalidate(orgId) {
      entries.delete(orgId);
    },
    clear() {
      entries.clear();
    },
  };
}
