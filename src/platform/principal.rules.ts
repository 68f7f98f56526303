// The authenticated platform account of a bearer-protected operation, as set
// by the bearerAuth security handler (auth.service.ts).
import { platformError } from '../http/errors.ts';
import type { Principal } from '../http/types.ts';

export function principalOf(c: { security: { bearerAuth?: Principal } }): Principal {
  const p = c.security.bearerAuth;
  // unreachable when the operation declares bearerAuth: openapi-backend
  // answers 401 before the handler runs
  if (!p) throw platformError(401, 4010, 'A valid bearer token is required');
  return p;
}
