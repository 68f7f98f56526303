// Bearer tokens: HS256 JWTs made and checked with jose. Verification pins the
// algorithm (so `alg: none` and RS/HS confusion are refused), the issuer, and
// the platform as audience.
import { SignJWT, jwtVerify } from 'jose';

export const ISSUER = 'trackway';

export interface TokenClaims {
  userId: number;
  platform: string;
}

export class Tokens {
  constructor(
    private readonly secret: Uint8Array,
    private readonly ttlSeconds: number,
  ) {}

  async sign(claims: TokenClaims): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({})
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
      const { payload } = await jwtVerify(token, this.secret, { algorithms: ['HS256'], issuer: ISSUER });
      const userId = Number(payload.sub);
      const aud = payload.aud;
      if (!Number.isSafeInteger(userId) || userId < 1 || typeof aud !== 'string') return undefined;
      return { userId, platform: aud };
    } catch {
      return undefined;
    }
  }
}
