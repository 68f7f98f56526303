// trackway_refuse(message): raises SQLSTATE TW001 with the message. A
// statement that runs outside a transaction calls it where it finds what it
// cannot finish on its own, so that the statement, and all it wrote, is
// undone, and the caller goes the longer way (issue 24: an identify batch
// in one statement; src/identity/identify-upsert.repository.ts). Its return
// type is boolean so that it can stand in a CASE that is otherwise true.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION trackway_refuse(message text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      RAISE EXCEPTION USING ERRCODE = 'TW001', MESSAGE = message;
    END
    $$;
  `.execute(db);
}
