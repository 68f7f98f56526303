// Identity details: the name a visitor gave, new visitors get a person of
// their own by default, and the recent-views list is maintained in SQL so an
// event updates it in one statement.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE visitors ADD COLUMN name text;
    ALTER TABLE visitors ALTER COLUMN person_id SET DEFAULT nextval('persons_id_seq');

    -- views: [{url, at}], most recent first, distinct urls, at most 3
    CREATE FUNCTION trackway_push_view(views jsonb, view_url text, view_at timestamptz) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
      SELECT COALESCE(jsonb_agg(e ORDER BY ord), '[]'::jsonb)
      FROM (
        SELECT e, ord FROM (
          SELECT jsonb_build_object('url', view_url,
                   'at', to_char(view_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) AS e, 0::bigint AS ord
          UNION ALL
          SELECT v.e, v.ord FROM jsonb_array_elements(COALESCE(views, '[]'::jsonb)) WITH ORDINALITY AS v(e, ord)
          WHERE v.e->>'url' <> view_url
        ) all_views
        ORDER BY ord
        LIMIT 3
      ) kept
    $$;
  `.execute(db);
}
