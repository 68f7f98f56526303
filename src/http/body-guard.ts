// What PostgreSQL cannot store, refused for every area before anything else
// sees the request: a NUL character (text and jsonb refuse it: 22021/22P05),
// an unpaired UTF-16 surrogate (not valid Unicode; jsonb refuses `\ud800`),
// and JSON nested deeper than MAX_JSON_DEPTH (deep jsonb hits PostgreSQL's
// stack limit, 54001). One iterative walk over the parsed body, so hostile
// nesting cannot overflow our stack either; the decoded path and the query
// string are checked for the same characters.
import { type Area, type FieldError, areaError } from './errors.ts';
import { bodyPointer, where } from './field-errors.ts';

/** Objects and arrays nested deeper than this are refused (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

// eslint-disable-next-line no-control-regex -- NUL is exactly what PostgreSQL text cannot store
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const BAD_TEXT = 'contains a NUL character or an unpaired surrogate';

/** Whether `text` can be stored as PostgreSQL text (no NUL, no lone surrogate). */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

function refuse(area: Area, path: string, message: string): never {
  const errors: FieldError[] = [{ path, message }];
  throw areaError(area, 'validation', `Invalid request: ${where(path)} ${message}`, { errors });
}

interface Entry {
  v: unknown;
  depth: number;
  parent: Entry | undefined;
  key: string | number;
}

/** The JSON Pointer of an entry (`/items/0/title`), built only for the one place that is reported. */
function pathOf(e: Entry): string {
  const keys: (string | number)[] = [];
  for (let cur: Entry | undefined = e; cur?.parent; cur = cur.parent) keys.push(cur.key);
  return bodyPointer(...keys.reverse());
}

/**
 * The first place in a parsed JSON value that PostgreSQL could not store: a
 * string or key with a NUL character or an unpaired surrogate, or an object
 * or array nested deeper than MAX_JSON_DEPTH (the value itself is level 1).
 */
export function findUnstorable(value: unknown): { path: string; message: string } | undefined {
  const stack: Entry[] = [{ v: value, depth: 1, parent: undefined, key: '' }];
  while (stack.length > 0) {
    const e = stack.pop()!;
    const v = e.v;
    if (typeof v === 'string') {
      if (!isStorableText(v)) return { path: pathOf(e), message: BAD_TEXT };
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (e.depth > MAX_JSON_DEPTH) return { path: pathOf(e), message: `is nested deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ v: v[i], depth: e.depth + 1, parent: e, key: i });
    } else {
      for (const key of Object.keys(v)) {
        if (!isStorableText(key)) return { path: pathOf(e), message: `has a key that ${BAD_TEXT}` };
        stack.push({ v: (v as Record<string, unknown>)[key], depth: e.depth + 1, parent: e, key });
      }
    }
  }
  return undefined;
}

/** Throws 400 in the area's shape when the parsed body holds something PostgreSQL could not store. */
export function guardBody(area: Area, body: unknown): void {
  const bad = findUnstorable(body);
  if (bad) refuse(area, bad.path, bad.message);
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
