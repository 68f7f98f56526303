// TRACKWAY_VALIDATE_RESPONSES (on in the test suite): a success answer is
// checked against the contract before it is written, by the Koa app
// (app.ts) and the fast path (fast-path.ts) alike, so drift between a
// handler and the contract fails loudly instead of reaching a client.
import type { OpenAPIBackend } from 'openapi-backend';
import type { Logger } from '../log.ts';

/** Throws (and logs) when `body` is not what the contract documents for this operation and status. */
export function validateResponse(api: OpenAPIBackend, log: Logger, operationId: string, status: number, body: unknown): void {
  const check = api.validator.validateResponse(body, operationId, status);
  if (!check.errors) return;
  log.error({ operationId, status, errors: check.errors }, 'response does not match the contract');
  throw new Error(`response of ${operationId} (${status}) does not match the contract`);
}
