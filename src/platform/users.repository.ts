// users: platform accounts, client users and analytics-host registrations share
// one table and one email space (email_key is the normalised email).
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { DB } from '../db/schema.ts';

type Db = Database | Transaction<DB>;

export const USER_COLUMNS = [
  'id',
  'name',
  'email',
  'phone',
  'is_active',
  'is_email_verified',
  'is_phone_verified',
  'is_superuser',
] as const;

export function findByEmailKey(db: Db, emailKey: string) {
  return db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'password_hash', 'platform_name'])
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
export async function insertUser(db: Db, u: NewUser) {
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
