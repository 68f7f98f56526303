// The dashboard's only way to the server: a typed client of the public API,
// made from the contract's generated types with openapi-fetch. The session
// (platform, bearer token) lives in sessionStorage, so it is gone with the tab.
import createClient from 'openapi-fetch';
import type { components, paths } from '../../../generated/openapi.ts';

export type Schemas = components['schemas'];

export interface Session {
  platform: string;
  email: string;
  token: string;
}

const KEY = 'trackway.session';

export function loadSession(): Session | null {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Session | null;
    return s && typeof s.token === 'string' && typeof s.platform === 'string' ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

export const api = createClient<paths>({ baseUrl: location.origin });

let expired: ((was: Session) => void) | undefined;

/** Called when the API rejects the token (expired, or signed with an old key): back to sign-in. */
export function onSessionExpired(fn: (was: Session) => void): void {
  expired = fn;
}

const isLogin = (schemaPath: string) => schemaPath.endsWith('/users/login');
/** a 401 of the password change may be a wrong current password (4011): the page decides (expireSession) */
const checksPassword = (schemaPath: string) => schemaPath.endsWith('/users/password');

/** The session is no longer valid: back to sign-in. */
export function expireSession(): void {
  const s = loadSession();
  clearSession();
  if (s) expired?.(s);
}

api.use({
  onRequest({ request, schemaPath }) {
    const s = loadSession();
    if (s && !isLogin(schemaPath)) request.headers.set('Authorization', `Bearer ${s.token}`);
    return request;
  },
  onResponse({ response, schemaPath }) {
    const s = loadSession();
    if (response.status === 401 && !isLogin(schemaPath) && !checksPassword(schemaPath) && s) {
      clearSession();
      expired?.(s);
    }
    return undefined;
  },
});

/** A failed call, with the API's own message (and field problems) when it sent them. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: { path: string; message: string }[] = [],
    /** seconds, from a 429's or 503's Retry-After */
    readonly retryAfter?: number,
    /** the platform API's `code` (4010, 4011, …) when it sent one */
    readonly code?: number,
  ) {
    super(message);
  }
}

/** The data of a successful call; anything else throws an ApiFailure. */
export async function call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let r: { data?: T; error?: unknown; response: Response };
  try {
    r = await request;
  } catch {
    throw new ApiFailure(0, 'The server could not be reached. Check the connection and try again.');
  }
  if (!r.response.ok) {
    const body = r.error as { message?: unknown; errors?: unknown; code?: unknown } | undefined;
    const message = typeof body?.message === 'string' ? body.message : `The request failed (HTTP ${r.response.status}).`;
    const retryAfter = Number(r.response.headers.get('Retry-After') ?? NaN);
    throw new ApiFailure(
      r.response.status,
      message,
      Array.isArray(body?.errors) ? (body.errors as { path: string; message: string }[]) : [],
      Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
      typeof body?.code === 'number' ? body.code : undefined,
    );
  }
  return r.data as T;
}

/** The reserved platform name of merchants who registered themselves (their session sees their own organisation). */
export const MERCHANT = 'merchant';

/** Signed in as a self-registered merchant rather than a platform account. */
export function isMerchant(): boolean {
  return loadSession()?.platform === MERCHANT;
}

/** The platform segment of every path, from the session. */
export function platform(): string {
  return loadSession()?.platform ?? '';
}
