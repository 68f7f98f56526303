// Identity details: the name a visitor gave, new visitors get a person of
// their own by default, and batched profile writes: a batch hands PostgreSQL,
// per person, the views it recorded (most recent first), which are put in
// front of the stored ones.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE visitors ADD COLUMN name text;
    ALTER TABLE visitors ALTER COLUMN person_id SET DEFAULT nextval('persons_id_seq');

    -- fresh: [{url, at}] most recent first (all newer than stored); result: distinct urls, at most 3
    CREATE FUNCTION trackway_prepend_views(fresh jsonb, stored jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
      SELECT COALESCE(jsonb_agg(e ORDER BY pos), '[]'::jsonb)
      FROM (
        SELECT e, pos FROM (
          SELECT DISTINCT ON (e->>'url') e, pos FROM (
            SELECT f.e, f.ord AS pos FROM jsonb_array_elements(COALESCE(fresh, '[]'::jsonb)) WITH ORDINALITY AS f(e, ord)
            UNION ALL
            SELECT s.e, 1000 + s.ord FROM jsonb_array_elements(COALESCE(stored, '[]'::jsonb)) WITH ORDINALITY AS s(e, ord)
          ) candidates
          ORDER BY e->>'url', pos
        ) firsts
        ORDER BY pos
        LIMIT 3
      ) kept
    $$;
  `.execute(db);
}
