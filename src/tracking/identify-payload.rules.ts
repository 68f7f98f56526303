// The identify payload: base64url (what the tracker sends) or standard base64
// (with `/` sent as %2F, already decoded by the router), padding optional;
// UTF-8 JSON validated against the contract's IdentifyPayload.
import type { ValidateFunction } from 'ajv';
import { createAjv } from '../http/ajv.ts';
import { findUnstorable } from '../http/body-guard.ts';
import { contractDocument } from '../http/contract.ts';
import { trackingError } from '../http/errors.ts';
import { valueFieldErrors } from '../http/field-errors.ts';
import type { Schemas } from '../http/types.ts';

export type IdentifyPayload = Schemas['IdentifyPayload'];

let validator: ValidateFunction | undefined;
function validate(): ValidateFunction {
  if (!validator) {
    const ajv = createAjv();
    ajv.addSchema(contractDocument(), 'contract');
    validator = ajv.compile({ $ref: 'contract#/components/schemas/IdentifyPayload' });
  }
  return validator;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function invalid(message: string) {
  return trackingError(400, 'invalid_payload', message);
}

export function decodeIdentifyPayload(segment: string): IdentifyPayload {
  const b64 = segment.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]+$/.test(b64) || b64.length % 4 === 1) {
    throw invalid('The payload is not base64 or base64url');
  }
  let text: string;
  try {
    text = utf8.decode(Buffer.from(b64, 'base64'));
  } catch {
    throw invalid('The decoded payload is not UTF-8 text');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('The decoded payload is not JSON');
  }
  const v = validate();
  if (!v(value)) {
    const first = valueFieldErrors(v.errors)[0];
    const field = first && first.path !== '' ? first.path.slice(1) : 'payload';
    throw invalid(`The decoded payload is invalid: ${field} ${first?.message ?? 'is invalid'}`);
  }
  // what the body guard refuses in bodies: text PostgreSQL cannot store
  const bad = findUnstorable(value);
  if (bad) throw invalid(`The decoded payload is invalid: ${bad.path === '' ? 'payload' : bad.path.slice(1)} ${bad.message}`);
  return value as IdentifyPayload;
}
