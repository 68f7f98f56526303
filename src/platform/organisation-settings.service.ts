// An organisation's trust settings (docs/design.md "Trust") and privacy
// settings (README "Privacy": honor_gpc, visitor_retention_days): how they
// read (OrganisationDetail), updateOrganisationSettings and
// rotateIdentitySecret.
// filter_bots (README "Bots") is read and changed here as well.
// Every change drops the organisation's cached policy in this process and,
// through `trackway_organisations`, in every other one.
import type { Deps } from '../deps.ts';
import { type FieldError, platformError } from '../http/errors.ts';
import { summary } from '../http/field-errors.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { MAX_ALLOWED_DOMAINS, normaliseAllowedDomain } from '../identity/url-policy.rules.ts';
import { newIdentitySecret } from '../identity/verification.rules.ts';
import { requireOrganisation } from './access.service.ts';
import { effectiveAllowedDomains } from './organisation-directory.service.ts';
import {
  announceOrganisationChange,
  ensureIdentitySecret,
  replaceIdentitySecret,
  type SettingsChange,
  updateSettings,
} from './organisation-settings.repository.ts';
import type { OrganisationRow } from './organisations.repository.ts';
import type { Cipher } from './secrets.service.ts';
import type { OrgId } from '../db/tenancy.ts';

// for privacy: a change of the suppression list drops the cached policy like a settings change; retention runs per organisation
export { announceOrganisationChange, organisationsWithRetention } from './organisation-settings.repository.ts';

type SettingsDeps = Pick<Deps, 'db' | 'cipher' | 'organisations'>;
export type TrustSettings = Pick<
  Schemas['OrganisationDetail'],
  | 'identity_verification'
  | 'allowed_domains'
  | 'enforce_origin'
  | 'export_unverified'
  | 'identity_secret'
  | 'honor_gpc'
  | 'visitor_retention_days'
  | 'filter_bots'
>;

/** A new identity secret, sealed with the server's cipher for storage. */
export function newSealedIdentitySecret(cipher: Cipher): string {
  return cipher.encrypt(newIdentitySecret());
}

/**
 * The trust settings of an organisation as read back, its identity secret
 * in clear. An organisation made before identity verification existed gets
 * its secret here, on first need.
 */
export async function trustSettings(deps: SettingsDeps, row: OrganisationRow): Promise<TrustSettings> {
  let sealed = row.identity_secret_enc;
  if (sealed === null) {
    sealed = (await ensureIdentitySecret(deps.db, row.id, newSealedIdentitySecret(deps.cipher))) ?? null;
    if (sealed === null) throw new Error(`organisation ${row.id} has no identity secret`);
    deps.organisations.invalidate(row.id);
    await announceOrganisationChange(deps.db, row.id);
  }
  return {
    identity_verification: row.identity_verification,
    allowed_domains: effectiveAllowedDomains(row),
    enforce_origin: row.enforce_origin,
    export_unverified: row.export_unverified,
    identity_secret: deps.cipher.decrypt(sealed),
    honor_gpc: row.honor_gpc,
    visitor_retention_days: row.visitor_retention_days,
    filter_bots: row.filter_bots,
  };
}

function invalid(errors: FieldError[]) {
  return platformError(400, 4000, summary(errors), errors);
}

/** The allowed_domains sent, normalised (lower-case, duplicates dropped), or the problems with them. */
export function parseAllowedDomains(raw: string[]): string[] {
  const errors: FieldError[] = [];
  const out: string[] = [];
  raw.forEach((entry, i) => {
    const host = normaliseAllowedDomain(entry);
    if (typeof host !== 'string') errors.push({ path: `/allowed_domains/${i}`, message: host.error });
    else if (!out.includes(host)) out.push(host);
  });
  if (raw.length === 0) errors.push({ path: '/allowed_domains', message: 'must list at least one host name (send null for the default)' });
  if (raw.length > MAX_ALLOWED_DOMAINS)
    errors.push({ path: '/allowed_domains', message: `must not list more than ${MAX_ALLOWED_DOMAINS} host names` });
  if (errors.length > 0) throw invalid(errors);
  return out;
}

export const MAX_RETENTION_DAYS = 3650;

/** visitor_retention_days: a whole number of days from 1 to 3650, or null (keep visitors). */
export function parseRetentionDays(raw: number | null): number | null {
  if (raw === null) return null;
  if (!Number.isSafeInteger(raw) || raw < 1 || raw > MAX_RETENTION_DAYS) {
    throw invalid([{ path: '/visitor_retention_days', message: `must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}, or null` }]);
  }
  return raw;
}

/** Applies the settings sent (at least one), then answers through `read`. */
export async function changeSettings<T>(
  deps: SettingsDeps,
  principal: Principal,
  orgId: OrgId,
  body: Schemas['OrganisationSettingsRequest'],
  read: () => Promise<T>,
): Promise<T> {
  await requireOrganisation(deps.db, principal, orgId);
  const change: SettingsChange = {};
  if (body.allowed_domains !== undefined) change.allowed_domains = body.allowed_domains === null ? null : parseAllowedDomains(body.allowed_domains);
  if (body.enforce_origin !== undefined) change.enforce_origin = body.enforce_origin;
  if (body.identity_verification !== undefined) change.identity_verification = body.identity_verification;
  if (body.export_unverified !== undefined) change.export_unverified = body.export_unverified;
  if (body.honor_gpc !== undefined) change.honor_gpc = body.honor_gpc;
  if (body.visitor_retention_days !== undefined) change.visitor_retention_days = parseRetentionDays(body.visitor_retention_days);
  if (body.filter_bots !== undefined) change.filter_bots = body.filter_bots;
  if (Object.keys(change).length === 0) {
    throw invalid([
      {
        path: '',
        message:
          'must set at least one of identity_verification, allowed_domains, enforce_origin, export_unverified, honor_gpc, visitor_retention_days, filter_bots',
      },
    ]);
  }
  await deps.db.transaction().execute(async (tx) => {
    await updateSettings(tx, orgId, change);
    // `required` without a secret would refuse every identify: make sure there is one
    if (change.identity_verification === 'required') await ensureIdentitySecret(tx, orgId, newSealedIdentitySecret(deps.cipher));
    await announceOrganisationChange(tx, orgId);
  });
  deps.organisations.invalidate(orgId);
  return read();
}

/** Replaces the identity secret: hashes made with the old one stop matching. */
export async function rotateSecret<T>(deps: SettingsDeps, principal: Principal, orgId: OrgId, read: () => Promise<T>): Promise<T> {
  await requireOrganisation(deps.db, principal, orgId);
  await deps.db.transaction().execute(async (tx) => {
    await replaceIdentitySecret(tx, orgId, newSealedIdentitySecret(deps.cipher));
    await announceOrganisationChange(tx, orgId);
  });
  deps.organisations.invalidate(orgId);
  return read();
}
