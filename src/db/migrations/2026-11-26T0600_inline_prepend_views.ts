// trackway_prepend_views as one expression PostgreSQL inlines (issue 24).
//
// The first version was a SELECT with FROM, DISTINCT ON and ORDER BY: a SQL
// function PostgreSQL cannot inline, so every statement that called it
// planned its body again. On the machine's PostgreSQL 15 that was ~125 µs of
// every profile upsert that met a stored person (auto_explain of the
// one-statement batch, updatecart with returning visitors: the persons insert
// took 0.19 ms for one row, 0.06 ms of it its input), and 180 µs per call by
// pgbench (docs/profiles/persons-prepend-views.md).
//
// This body is a single expression of immutable functions (jsonb_set, not the
// stable jsonb_build_object), so the planner puts it in place of the call.
// It relies on what both callers hand it: `fresh` distinct by url, most
// recent first, at most 3 (Stitching's profile and the one-statement batch's
// `views` CTE); `stored` is what this function returned before, so distinct
// too. The result is the same: fresh, then the stored views whose url fresh
// lacks, at most 3 in all.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION trackway_prepend_views(fresh jsonb, stored jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
      SELECT jsonb_path_query_array(
        COALESCE(fresh, '[]'::jsonb) || jsonb_path_query_array(
          COALESCE(stored, '[]'::jsonb),
          '$[*] ? (!(@.url == $fresh[*].url))',
          jsonb_set('{}'::jsonb, '{fresh}', COALESCE(fresh, '[]'::jsonb))),
        '$[0 to 2]')
    $$;
  `.execute(db);
}
