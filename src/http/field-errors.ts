// Validation failures as `[{path, message}]` with human messages. `path` is a
// JSON Pointer into the body (`/data/endpoint`, `""` for the whole body), or
// `path.<name>`, `query.<name>`, `header.<name>` for a parameter; messages
// never show a raw regular expression (PATTERNS says what each one means).
import type { ErrorObject } from 'ajv';
import type { FieldError } from './errors.ts';

/** A JSON Pointer (RFC 6901) into the body from its property names and array indexes. */
export function bodyPointer(...segments: (string | number)[]): string {
  return segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** How a path reads inside a sentence: the whole body has the empty pointer. */
export function where(path: string): string {
  return path === '' ? 'the body' : path;
}

/** What each pattern of the contract asks for, in words. */
const PATTERNS: Record<string, string> = {
  '^[a-z0-9][a-z0-9_-]{0,62}$': 'must be 1 to 63 lower-case letters, digits, "-" or "_", starting with a letter or digit',
  '^[A-Za-z0-9._-]{1,64}$': 'must be 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" or "-"',
  '^\\s*$|^\\s*[^@\\s]+@[^@\\s]+\\.[^@\\s]+\\s*$': 'must be an email address (name@domain.tld)',
  '^\\s*$|^\\s*\\+?[0-9 ().-]{3,31}\\s*$': 'must be a phone number: digits, spaces, "(", ")", "." or "-", optionally after a leading "+"',
  '^[0-9A-Fa-f]{64}$': 'must be 64 hexadecimal characters',
  '^https?://': 'must be an http or https URL',
  '^[!-~]+$': 'must be printable ASCII without spaces',
  '^(?:[1-9]|[12][0-9]|30)$': 'must be a whole number of seconds from 1 to 30, as a string ("10")',
  '^[A-Za-z0-9+/_=%-]{1,4096}$': 'must be base64url of the JSON payload, at most 4096 characters',
};

const PARTS: Record<string, string> = { path: 'path', query: 'query', header: 'header', headers: 'header' };

function unescape(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** One Ajv error in words, without the schema's internals. */
export function describe(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not allowed';
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must equal ${JSON.stringify(params.allowedValue)}`;
    case 'pattern':
      return PATTERNS[String(params.pattern)] ?? 'has an invalid format';
    case 'format':
      return `must be a valid ${String(params.format)}`;
    default:
      return e.message ?? 'is invalid';
  }
}

/** Where an error points: the instance path plus the property a `required` or `additionalProperties` names. */
function segmentsOf(e: ErrorObject): string[] {
  const segs = e.instancePath.split('/').slice(1).map(unescape);
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') segs.push(String(params.missingProperty));
  if (e.keyword === 'additionalProperties') segs.push(String(params.additionalProperty));
  return segs;
}

/** Errors of openapi-backend's request validation (instance paths `/requestBody/...`, `/path/<name>`, ...). */
export function requestFieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  return collect(errors, (e) => {
    const [first, ...rest] = segmentsOf(e);
    if (first === 'requestBody') return bodyPointer(...rest);
    if (first && PARTS[first]) return [PARTS[first], ...rest].join('.');
    return bodyPointer(...(first ? [first, ...rest] : []));
  });
}

/** Errors of a schema validated on its own (a decoded payload): pointers into that value. */
export function valueFieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  return collect(errors, (e) => bodyPointer(...segmentsOf(e)));
}

function collect(errors: ErrorObject[] | null | undefined, pathOf: (e: ErrorObject) => string): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  const typeAt = new Map<string, FieldError>();
  for (const e of errors ?? []) {
    // oneOf/anyOf/if wrappers repeat what their branches said
    if (['oneOf', 'anyOf', 'if'].includes(e.keyword) && out.length > 0) continue;
    const path = pathOf(e);
    // the branches of a oneOf of types: one "must be string or object"
    const earlier = e.keyword === 'type' ? typeAt.get(path) : undefined;
    if (earlier) {
      earlier.message += ` or ${String((e.params as { type?: unknown }).type)}`;
      continue;
    }
    const message = describe(e);
    const key = `${path} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const error = { path, message };
    if (e.keyword === 'type') typeAt.set(path, error);
    out.push(error);
    if (out.length >= 20) break;
  }
  return out;
}

/** The one-line message of a validation failure, naming the first three problems. */
export function summary(errors: FieldError[]): string {
  if (errors.length === 0) return 'The request is invalid';
  const first = errors.slice(0, 3).map((e) => `${where(e.path)} ${e.message}`);
  return `Invalid request: ${first.join('; ')}${errors.length > 3 ? ` (and ${errors.length - 3} more)` : ''}`;
}
