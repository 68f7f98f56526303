// Input errors of the analytics services for what the contract cannot
// express. Text PostgreSQL cannot store (NUL, lone surrogates) and hostile
// nesting are refused for every area by the body guard (src/http/body-guard.ts)
// before a request gets here.
import { analyticsFailure } from '../http/errors.ts';

/** 400/5100 in the analytics shape, worded like the contract's validation failures. */
export function invalidInput(path: string, message: string) {
  return analyticsFailure(400, 5100, `Invalid request: ${path} ${message}`);
}
