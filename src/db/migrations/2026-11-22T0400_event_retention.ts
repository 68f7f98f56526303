// Retention of tracked events: whole monthly partitions older than the
// retention window are dropped (instant, no row-by-row delete, no bloat).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- drops the partitions of events whose whole range ends before keep_after; returns their names
    CREATE FUNCTION trackway_drop_event_partitions(keep_after timestamptz) RETURNS SETOF text
    LANGUAGE plpgsql AS $$
    DECLARE
      part record;
      upper_bound timestamptz;
    BEGIN
      FOR part IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass
      LOOP
        -- FOR VALUES FROM ('...') TO ('...')
        upper_bound := substring(part.bound FROM 'TO \\(''([^'']+)''\\)')::timestamptz;
        IF upper_bound IS NOT NULL AND upper_bound <= keep_after THEN
          EXECUTE format('DROP TABLE IF EXISTS %I', part.relname);
          RETURN NEXT part.relname;
        END IF;
      END LOOP;
    END $$;
  `.execute(db);
}
