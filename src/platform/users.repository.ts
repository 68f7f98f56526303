// users: platform accounts, client users and analytics-host registrations share
// one table and one email space (email_key is the normalised email).
import { sql } from 'kysely';
import { type Executor } from '../db/tenancy.ts';

export const USER_COLUMNS = ['id', 'name', 'email', 'phone', 'is_active', 'is_email_verified', 'is_phone_verified', 'is_superuser'] as const;

export function findByEmailKey(db: Executor, emailKey: string) {
  return db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'password_hash', 'platform_name', 'session_version'])
    .where('email_key', '=', emailKey)
    .executeTakeFirst();
}

export interface NewUser {
  email: string;
  emailKey: string;
  name: string;
  phone: string;
  passwordHash: string | null;
  platformName: string | null;
}

/** Inserts a user; undefined when the email is taken (also under a concurrent insert). */
export async function insertUser(db: Executor, u: NewUser) {
  return db
    .insertInto('users')
    .values({
      email: u.email,
      email_key: u.emailKey,
      name: u.name,
      phone: u.phone,
      password_hash: u.passwordHash,
      platform_name: u.platformName,
    })
    .onConflict((oc) => oc.column('email_key').doNothing())
    .returning(USER_COLUMNS)
    .executeTakeFirst();
}

/**
 * A new password: stores its hash and increments the session version, which
 * revokes every bearer token issued before. Returns the new version.
 */
export async function changePassword(db: Executor, userId: number, passwordHash: string): Promise<number | undefined> {
  const row = await db
    .updateTable('users')
    .set({ password_hash: passwordHash, session_version: sql<number>`session_version + 1`, modified_at: sql<Date>`now()` })
    .where('id', '=', userId)
    .returning('session_version')
    .executeTakeFirst();
  return row?.session_version;
}

/** A user with what a password change needs (the stored hash and the normalised email). */
export function findUserWithPassword(db: Executor, id: number) {
  return db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'email_key', 'password_hash', 'platform_name', 'session_version'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * A password change by the account itself: like changePassword, but only
 * while the stored hash is still `previous` (the one the current password
 * was checked against; a concurrent change wins). Returns the new session
 * version, undefined when the hash had changed.
 */
export async function replacePassword(db: Executor, userId: number, previous: string, passwordHash: string): Promise<number | undefined> {
  const row = await db
    .updateTable('users')
    .set({ password_hash: passwordHash, session_version: sql<number>`session_version + 1`, modified_at: sql<Date>`now()` })
    .where('id', '=', userId)
    .where('password_hash', '=', previous)
    .returning('session_version')
    .executeTakeFirst();
  return row?.session_version;
}

/**
 * The same password hashed again with the current cost (a rehash at login):
 * only if the stored hash is still `previous` (a concurrent password change
 * wins), and without touching the session version.
 */
export async function upgradePasswordHash(db: Executor, userId: number, previous: string, passwordHash: string): Promise<boolean> {
  const r = await db
    .updateTable('users')
    .set({ password_hash: passwordHash })
    .where('id', '=', userId)
    .where('password_hash', '=', previous)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** What checking a bearer token needs of its user. */
export function findSessionUser(db: Executor, id: number) {
  return db.selectFrom('users').select(['id', 'platform_name', 'is_active', 'session_version']).where('id', '=', id).executeTakeFirst();
}
