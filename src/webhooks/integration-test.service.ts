// testIntegration: one signed sample contact-match posted to the endpoint
// now, with the same headers, timeout and private-address guard as real
// deliveries, marked as a test (`"test": true` and `Trackway-Test: true`,
// README "Webhooks"). Not stored, never retried; works whether or not the
// integration is active or subscribes to contacts.
import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { platformError } from '../http/errors.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { type CredentialCache, createCredentialCache } from './credentials.service.ts';
import { findMemberIntegrationTarget } from './integrations.repository.ts';
import { memberOrganisationDomainKey } from '../platform/organisations.service.ts';
import { defaultAllowedDomains, urlHost } from '../identity/url-policy.rules.ts';
import { type ContactMatched, contactMatchedPayload } from './payloads/contact-matched.payload.ts';
import { delivers } from './retry.rules.ts';
import { type Sender, createSender } from './sender.client.ts';
import { deliveryHeaders, userAgent } from './signing.crypto.ts';
import type { OrgId } from '../db/tenancy.ts';

export interface IntegrationTester {
  test(principal: Principal, integrationId: number): Promise<Schemas['IntegrationTestResult']>;
}

/** The contact of every test delivery: RFC 2606's reserved `.invalid`, so no mail can ever reach anyone. */
export const TEST_CONTACT = 'test.contact@example.invalid';

/** The header that marks a test delivery (besides `"test": true` in its body). */
export const TEST_HEADER = 'trackway-test';

/**
 * The sample body: placeholder contact data for the integration's
 * organisation, marked `test: true`, with product URLs on the organisation's
 * own domain (its domain_key; left out when that is not a host name).
 */
export function sampleContactMatch(orgId: OrgId, domainKey: string, at = new Date()): string {
  const host = defaultAllowedDomains(domainKey)[0] ?? domainKey;
  const product = `https://${host}/products/sample-product`;
  const valid = urlHost(product) !== null;
  const body: ContactMatched = {
    ...contactMatchedPayload({
      orgId,
      contact: TEST_CONTACT,
      type: 'EMAIL',
      at,
      visitor: { coreId: 'sample-visitor', roamingId: 'sample-session', corexId: null },
      lastView: valid ? [product] : [],
      lastAddToCart: valid ? product : null,
    }),
    test: true,
  };
  return JSON.stringify(body);
}

export function createIntegrationTester(deps: Pick<Deps, 'db' | 'config' | 'cipher'>): IntegrationTester {
  let sender: Sender | undefined;
  let credentials: CredentialCache | undefined;
  const ua = userAgent(deps.config.publicUrl);
  return {
    async test(principal, integrationId) {
      const target = await findMemberIntegrationTarget(deps.db, principal.userId, integrationId);
      if (!target) throw platformError(404, 4040, 'Integration not found');
      sender ??= createSender({ allowPrivateNetworks: deps.config.webhookAllowPrivateNetworks, maxSocketsPerOrigin: 4, maxFreeSocketsPerOrigin: 4 });
      credentials ??= createCredentialCache(deps.cipher, 1000);
      const creds = credentials.get({
        integrationId: target.id,
        modifiedAt: target.modified_at,
        authTokenEnc: target.auth_token_enc,
        signingSecretEnc: target.signing_secret_enc,
      });
      const domain = await memberOrganisationDomainKey(deps.db, principal.userId, target.org_id);
      if (domain === undefined) throw platformError(404, 4040, 'Integration not found');
      const body = sampleContactMatch(target.org_id, domain);
      const webhookId = `msg_test_${randomBytes(12).toString('hex')}`;
      const r = await sender.send({
        url: target.endpoint,
        body,
        headers: { ...deliveryHeaders(creds, webhookId, body, ua), [TEST_HEADER]: 'true' },
        timeoutMs: target.http_timeout * 1000,
      });
      return {
        delivered: delivers(r.statusCode),
        status_code: r.statusCode,
        duration_ms: r.durationMs,
        error: r.error,
        response_excerpt: r.responseExcerpt,
      };
    },
  };
}
