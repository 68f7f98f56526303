// `npm run bench -- --preload N`: N events written straight into the events
// table of the benchmark organisation (spread over the current month, so they
// land in the partition ingestion writes to), in chunks, then analysed.
import pg from 'pg';

export async function preloadEvents(databaseUrl: string, org: number, total: number, log: (l: string) => void): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl, application_name: 'trackway-bench' });
  await db.connect();
  const chunk = 500_000;
  const started = Date.now();
  const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
  const span = Date.now() - monthStart.getTime() - 60_000;
  for (let done = 0; done < total; done += chunk) {
    const n = Math.min(chunk, total - done);
    await db.query(
      `INSERT INTO events (org_id, received_at, name, core_id, roaming_id, corex_id, body)
       SELECT $1::bigint,
              $2::timestamptz + (random() * $3::double precision) * interval '1 millisecond',
              (ARRAY['view','productview','updatecart','categoryview'])[1 + (g % 4)],
              'preload-' || (g % 2000000), 'r', NULL,
              jsonb_build_object('page', 'https://bench-shop.example/p/' || (g % 5000))
       FROM generate_series($4::bigint, $5::bigint) AS g`,
      [org, monthStart.toISOString(), span, done + 1, done + n],
    );
    log(`   preloaded ${done + n} / ${total} events (${Math.round((Date.now() - started) / 1000)} s)`);
  }
  await db.query('ANALYZE events');
  await db.end();
}
