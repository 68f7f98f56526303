// The receiving side of Trackway's webhooks: Standard Webhooks verification
// (docs/design.md, Outbound webhooks; the signing side is src/webhooks/signing.crypto.ts)
// and telling a test delivery ("Send test") from a real notification.
// Runs on Node (node:crypto), where a receiver runs.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Schemas } from '../../generated/client.ts';

/** Every notification Trackway posts, by `medium`. */
export type WebhookNotification = Schemas['ContactMatchedNotification'] | Schemas['EventExportedNotification'] | Schemas['ContactErasedNotification'];

/** A fetch `Headers`, or Node's `req.headers` (lower-case names; arrays for repeated ones). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** The raw request body, before any parsing (a string, or the bytes as received). */
export type RawBody = string | Uint8Array;

export type WebhookVerificationReason = 'missing_header' | 'invalid_timestamp' | 'timestamp_out_of_tolerance' | 'invalid_signature' | 'invalid_body';

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** how far `webhook-timestamp` may be from now, either way (default 300 s, as Standard Webhooks) */
  toleranceSeconds?: number;
  /** the time to compare with, in milliseconds (default Date.now()) */
  now?: number;
}

/** The header `Trackway-Test: true` that a test delivery carries. */
export const TEST_DELIVERY_HEADER = 'trackway-test';

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  let v = record[name];
  if (v === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    v = key === undefined ? undefined : record[key];
  }
  return Array.isArray(v) ? v[0] : v;
}

/** The HMAC key of a `whsec_<base64>` secret (a secret without the prefix is taken as base64 too). */
function signingKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  if (key.length === 0) throw new TypeError('the signing secret is empty');
  return key;
}

/**
 * Verifies a delivery as Standard Webhooks defines it and returns its parsed
 * body: `webhook-signature` must hold a `v1,` entry equal to the base64
 * HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{raw body}` keyed with the
 * integration's `signing_secret` (compared in constant time), and
 * `webhook-timestamp` must be within five minutes of now. Pass the raw body,
 * exactly as received. Throws a WebhookVerificationError otherwise.
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, body: RawBody, options: VerifyOptions = {}): WebhookNotification {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature) {
    throw new WebhookVerificationError('missing_header', 'webhook-id, webhook-timestamp and webhook-signature are required');
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('invalid_timestamp', 'webhook-timestamp is not a Unix time in seconds');
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `webhook-timestamp is more than ${tolerance} s from now`);
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const expected = createHmac('sha256', signingKey(secret)).update(`${id}.${timestamp}.`).update(bytes).digest();
  let matched = false;
  for (const entry of signature.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(entry.slice(comma + 1), 'base64');
    // every entry is compared (no early exit), each in constant time
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('invalid_signature', 'no webhook-signature entry matches the body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || typeof (parsed as { medium?: unknown }).medium !== 'string') {
    throw new WebhookVerificationError('invalid_body', 'the body is not a Trackway notification');
  }
  return parsed as WebhookNotification;
}

/**
 * Whether a delivery is a test ("Send test" in the dashboard, or
 * `testIntegration`): the header `Trackway-Test: true`, or `"test": true` in
 * the body (parsed, or raw). A test delivery holds placeholder data
 * (`test.contact@example.invalid`): verify it, answer 2xx, act on nothing.
 */
export function isTestDelivery(headers: WebhookHeaders, body: RawBody | object): boolean {
  if (header(headers, TEST_DELIVERY_HEADER)?.trim().toLowerCase() === 'true') return true;
  let value: unknown = body;
  if (typeof body === 'string' || body instanceof Uint8Array) {
    try {
      value = JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body));
    } catch {
      return false;
    }
  }
  return value !== null && typeof value === 'object' && (value as { test?: unknown }).test === true;
}
