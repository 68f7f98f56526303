// The bearerAuth security handler: a valid token of an active platform
// account (or a merchant session: platform `merchant`, a self-registered
// user), issued for the platform named in the path (when the path names
// one), and not revoked by a password change since (session version).
import type { Deps } from '../deps.ts';
import { isUnavailable, platformError, unavailableError } from '../http/errors.ts';
import type { Principal } from '../http/types.ts';
import { loginPlatformOf } from './normalise.rules.ts';
import { findSessionUser } from './users.repository.ts';

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/;

function unauthorized(message: string) {
  const err = platformError(401, 4010, message);
  err.headers['WWW-Authenticate'] = 'Bearer';
  return err;
}

export async function authenticate(deps: Deps, header: string, platformInPath: string | undefined): Promise<Principal> {
  if (!header) throw unauthorized('A bearer token is required');
  const value = header.trim();
  // `Bearer <anything>` has the right shape: a token that is not one of ours is invalid, not misplaced
  if (!/^Bearer\s+\S/i.test(value)) throw unauthorized('The Authorization header must be "Bearer <token>"');
  const m = BEARER.exec(value);
  if (!m) throw unauthorized('The bearer token is invalid or expired');
  const claims = await deps.tokens.verify(m[1]!);
  if (!claims) throw unauthorized('The bearer token is invalid or expired');
  if (platformInPath !== undefined && claims.platform !== platformInPath) {
    throw unauthorized('The bearer token was issued for another platform');
  }
  // openapi-backend answers any failure of a security handler with the
  // unauthorizedHandler, which passes ApiErrors through: a database outage
  // must read as 503 + Retry-After, not as a bad token
  const user = await findSessionUser(deps.db, claims.userId).catch((err: unknown) => {
    throw isUnavailable(err) ? unavailableError('platform') : err;
  });
  // a merchant session (platform `merchant`) belongs to a user without a platform
  if (!user || !user.is_active || loginPlatformOf(user) !== claims.platform) {
    throw unauthorized('The bearer token is invalid or expired');
  }
  if (claims.sessionVersion !== user.session_version) {
    throw unauthorized('The bearer token was revoked by a password change; log in again');
  }
  return { userId: user.id, platform: claims.platform };
}
