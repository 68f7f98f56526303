// What PostgreSQL cannot store, refused for every area before anything else
// sees the request: a NUL character (text and jsonb refuse it: 22021/22P05),
// an unpaired UTF-16 surrogate (not valid Unicode; jsonb refuses `\ud800`),
// and JSON nested deeper than MAX_JSON_DEPTH (deep jsonb hits PostgreSQL's
// stack limit, 54001). One iterative walk over the parsed body, so hostile
// nesting cannot overflow our stack either; the decoded path and the query
// string are checked for the same characters.
import { type Area, type FieldError, areaError } from './errors.ts';

/** Objects and arrays nested deeper than this are refused (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const BAD_TEXT = 'contains a NUL character or an unpaired surrogate';

/** Whether `text` can be stored as PostgreSQL text (no NUL, no lone surrogate). */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

function refuse(area: Area, path: string, message: string): never {
  const errors: FieldError[] = [{ path, message }];
  throw areaError(area, 'validation', `Invalid request: ${path} ${message}`, { errors });
}

function keyPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}.${key}`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key.slice(0, 40))}]`;
}

/**
 * Throws 400 in the area's shape unless every string and key of the parsed
 * body is storable and objects/arrays nest at most MAX_JSON_DEPTH levels.
 */
export function guardBody(area: Area, body: unknown): void {
  if (typeof body === 'string') {
    if (!isStorableText(body)) refuse(area, 'body', BAD_TEXT);
    return;
  }
  if (typeof body !== 'object' || body === null) return;
  const stack: { v: unknown; depth: number; path: string }[] = [{ v: body, depth: 1, path: 'body' }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (!isStorableText(v)) refuse(area, path, BAD_TEXT);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_JSON_DEPTH) refuse(area, path, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ v: v[i], depth: depth + 1, path: keyPath(path, i) });
    } else {
      for (const key of Object.keys(v)) {
        if (!isStorableText(key)) refuse(area, path, `has a key that ${BAD_TEXT}`);
        stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1, path: keyPath(path, key) });
      }
    }
  }
}

/** Throws 400 in the area's shape when the decoded path or a query value holds a NUL character. */
export function guardUrl(area: Area, decodedPath: string, query: Record<string, string | string[] | undefined>): void {
  if (!isStorableText(decodedPath)) refuse(area, 'path', BAD_TEXT);
  for (const [name, value] of Object.entries(query)) {
    if (!isStorableText(name)) refuse(area, 'query', `has a parameter name that ${BAD_TEXT}`);
    for (const v of Array.isArray(value) ? value : [value ?? '']) {
      if (!isStorableText(v)) refuse(area, `query.${name.slice(0, 40)}`, BAD_TEXT);
    }
  }
}
