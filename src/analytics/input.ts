// Input checks the contract cannot express, shared by the analytics services:
// text PostgreSQL can store (no NUL character, no lone UTF-16 surrogate, which
// jsonb refuses), and JSON values of bounded nesting.
import { analyticsFailure } from '../http/errors.ts';

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Objects and arrays nested deeper than this are refused. */
export const MAX_JSON_DEPTH = 32;

/** 400/5100 in the analytics shape, worded like the contract's validation failures. */
export function invalidInput(path: string, message: string) {
  return analyticsFailure(400, 5100, `Invalid request: ${path} ${message}`);
}

/** Throws 400/5100 unless `text` can be stored as PostgreSQL text. */
export function requireStorableText(text: string, path: string): void {
  if (UNSTORABLE.test(text)) throw invalidInput(path, 'contains a NUL character or an unpaired surrogate');
}

/**
 * Throws 400/5100 unless every key and string in `value` is storable and
 * objects/arrays nest at most MAX_JSON_DEPTH deep. Iterative, so hostile
 * nesting cannot overflow the stack.
 */
export function requireStorableJson(value: unknown, path: string): void {
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (typeof v === 'string') requireStorableText(v, path);
    else if (typeof v === 'object' && v !== null) {
      if (depth >= MAX_JSON_DEPTH) throw invalidInput(path, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
      if (Array.isArray(v)) for (const item of v) stack.push({ v: item, depth: depth + 1 });
      else {
        for (const [k, item] of Object.entries(v)) {
          requireStorableText(k, path);
          stack.push({ v: item, depth: depth + 1 });
        }
      }
    }
  }
}
