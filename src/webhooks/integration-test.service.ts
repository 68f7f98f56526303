// testIntegration: one signed sample contact-match posted to the endpoint
// now, with the same headers, timeout and private-address guard as real
// deliveries. Not stored, never retried; works whether or not the
// integration is active or subscribes to contacts.
import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { platformError } from '../http/errors.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { type CredentialCache, createCredentialCache } from './credentials.ts';
import { findMemberIntegrationTarget } from './integrations.repository.ts';
import { contactMatchedPayload } from './payloads/contact-matched.ts';
import { type Sender, createSender } from './sender.ts';
import { deliveryHeaders, userAgent } from './signing.ts';

export interface IntegrationTester {
  test(principal: Principal, integrationId: number): Promise<Schemas['IntegrationTestResult']>;
}

/** The sample body: placeholder contact data for the integration's organisation. */
export function sampleContactMatch(orgId: number, at = new Date()): string {
  return JSON.stringify(
    contactMatchedPayload({
      orgId,
      contact: 'test.contact@example.com',
      type: 'EMAIL',
      at,
      visitor: { coreId: 'sample-visitor', roamingId: 'sample-session', corexId: null },
      lastView: ['https://shop.example.com/products/sample-product'],
      lastAddToCart: 'https://shop.example.com/products/sample-product',
    }),
  );
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
      const body = sampleContactMatch(target.org_id);
      const webhookId = `msg_test_${randomBytes(12).toString('hex')}`;
      const r = await sender.send({
        url: target.endpoint,
        body,
        headers: deliveryHeaders(creds, webhookId, body, ua),
        timeoutMs: target.http_timeout * 1000,
      });
      return {
        delivered: r.statusCode !== null && r.statusCode >= 200 && r.statusCode <= 299,
        status_code: r.statusCode,
        duration_ms: r.durationMs,
        error: r.error,
        response_excerpt: r.responseExcerpt,
      };
    },
  };
}
