// Standard Webhooks signing and the headers every delivery carries.
// Signature: `v1,` + base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)),
// the key being the base64-decoded part of the `whsec_` secret.
import { createHmac } from 'node:crypto';
import { PACKAGE_VERSION } from '../project.ts';

const SECRET_PREFIX = 'whsec_';

/** The HMAC key of a `whsec_<base64>` secret (a secret without the prefix is taken as base64 too). */
export function signingKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(b64, 'base64');
  if (key.length === 0) throw new Error('the signing secret is empty');
  return key;
}

export function sign(key: Buffer, webhookId: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${webhookId}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

export function userAgent(publicUrl: string): string {
  return `Trackway-Webhooks/${PACKAGE_VERSION} (+${publicUrl}/docs/webhooks)`;
}

export interface Credentials {
  /** the integration's data.authToken in clear, when set */
  authToken: string | null;
  key: Buffer;
}

/** Headers of one attempt; `webhook-timestamp` is the time of this attempt. */
export function deliveryHeaders(creds: Credentials, webhookId: string, body: string, ua: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': ua,
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(creds.key, webhookId, timestamp, body),
  };
  if (creds.authToken) headers.authorization = `Bearer ${creds.authToken}`;
  return headers;
}
