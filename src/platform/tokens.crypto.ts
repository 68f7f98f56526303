// Bearer tokens: HS256 JWTs made and checked with jose. Verification pins the
// algorithm (so `alg: none` and RS/HS confusion are refused), the issuer, and
// the platform as audience, and requires an expiry (`exp`): a token signed
// with the right key but without one is refused.
//
// Revocation: each token carries the account's session version (claim `sv`,
// users.session_version); a password change increments it, so every token
// issued before the change stops working at once (src/platform/auth.service.ts
// compares them on every request). A version rather than "issued before the
// change" (`iat` < password_changed_at) because `iat` has a resolution of one
// second (a token issued in the same second as the change would survive it,
// or a fresh login right after it would be refused) and would depend on the
// clocks of every host agreeing. Tokens of older versions carry no `sv`: they
// count as version 0, valid until the first password change.
import { SignJWT, jwtVerify } from 'jose';

export const ISSUER = 'trackway';

export interface TokenClaims {
  userId: number;
  platform: string;
  /** users.session_version when the token was issued */
  sessionVersion: number;
}

export class Tokens {
  constructor(
    private readonly secret: Uint8Array,
    private readonly ttlSeconds: number,
  ) {}

  async sign(claims: Omit<TokenClaims, 'sessionVersion'> & { sessionVersion?: number }): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ sv: claims.sessionVersion ?? 0 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(claims.platform)
      .setSubject(String(claims.userId))
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .sign(this.secret);
  }

  /** The claims of a valid token, or undefined for anything else. */
  async verify(token: string): Promise<TokenClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.secret, { algorithms: ['HS256'], issuer: ISSUER, requiredClaims: ['exp'] });
      const userId = Number(payload.sub);
      const aud = payload.aud;
      const sv = payload.sv === undefined ? 0 : payload.sv;
      if (!Number.isSafeInteger(userId) || userId < 1 || typeof aud !== 'string') return undefined;
      if (typeof sv !== 'number' || !Number.isSafeInteger(sv) || sv < 0) return undefined;
      return { userId, platform: aud, sessionVersion: sv };
    } catch {
      return undefined;
    }
  }
}
