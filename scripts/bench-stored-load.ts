// `npm run bench -- --stored N`: N stored events, and what a shop that stored
// them would also have, written straight into one organisation of a
// (scratch) database with set-based SQL (generate_series), not through HTTP.
//
// For N events and E events per visitor (`--stored-per-visitor`, default 5):
//   visitors         V = ⌈N / E⌉, ids of 32 hex digits as the tracker's: 12
//                    of the first_seen milliseconds, then 20 of an md5;
//   persons          one per visitor (ids drawn from persons_id_seq, as the
//                    service draws them); a profile row for every 4th;
//   contacts         every 20th visitor's person has an email, linked to it;
//   events           all N in the current month's partition — the one ingest
//                    writes to, so its indexes are as large as N makes them
//                    (the worst case: a real store spreads over months) —,
//                    received_at spread evenly from the start of the month to
//                    a minute ago, visitor i's events E apart in that order;
//                    60 % view, 20 % productview, 10 % updatecart, 10 %
//                    categoryview, bodies as the tracker sends them.
// Visitors are written in the order of their number, which is the order of
// their first_seen and so of their ids: the person, last-seen and primary-key
// indexes grow at one edge, as the tracker's time-ordered ids make them grow
// in production. Events are written in chunks of CHUNK, each sorted by core_id so
// its inserts into events_visitor sweep the index once instead of landing at
// random;
// then VACUUM (ANALYZE) of the loaded tables (as a store that has been
// running for a month would be: visibility map set, statistics current) and
// a CHECKPOINT (so the measurement does not start inside one).
import pg from 'pg';

const CHUNK = 1_000_000;

export interface StoredFacts {
  events: number;
  visitors: number;
  persons_with_profile: number;
  contacts: number;
  seconds: { events: number; others: number; vacuum: number; checkpoint: number; total: number };
  database_bytes: number;
  events_bytes: number;
  visitors_bytes: number;
}

export async function loadStored(url: string, org: number, events: number, perVisitor: number, log: (l: string) => void): Promise<StoredFacts> {
  const db = new pg.Client({ connectionString: url, application_name: 'trackway-bench-load' });
  db.on('error', () => {});
  await db.connect();
  const t0 = Date.now();
  const secs = (t: number) => Number(((Date.now() - t) / 1000).toFixed(1));
  try {
    // the chunks' sorts in memory (a million rows of ~200 bytes)
    await db.query(`SET work_mem = '1GB'`);
    await db.query(`SET maintenance_work_mem = '512MB'`);
    const V = Math.ceil(events / perVisitor);
    const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
    const spanMs = Math.max(60_000, Date.now() - monthStart.getTime() - 60_000);
    // ids drawn from the service's own sequences, so the ones it draws later never collide
    const reserve = async (seq: string, n: number) => {
      const { rows } = await db.query<{ base: string }>(`SELECT nextval($1::regclass) - 1 AS base`, [seq]);
      const base = Number(rows[0]!.base);
      if (n > 0) await db.query(`SELECT setval($1::regclass, $2::bigint)`, [seq, base + n + 1]);
      return base;
    };
    const personBase = await reserve('persons_id_seq', V);
    const contacts = Math.floor(V / 20);
    const contactBase = await reserve('contacts_id_seq', contacts);
    // the time of stored event g (1..N), as SQL over $2 (month start) and $3 (span in ms) and $4 (N)
    const at = (g: string) =>
      `$2::timestamptz + ((${g} - 1)::double precision / $4::double precision) * $3::double precision * interval '1 millisecond'`;
    // visitor i's id: its first_seen (at(i), over $2–$4) in 12 hex digits of milliseconds, then 20 of an md5
    const core = (i: string) => `lpad(to_hex((extract(epoch FROM ${at(i)}) * 1000)::bigint), 12, '0') || left(md5('stored-' || ${i}), 20)`;
    const params = [org, monthStart.toISOString(), spanMs, events];

    const tOthers = Date.now();
    log(`   ${V} visitors, ${V} persons (${Math.floor(V / 4)} with a profile), ${contacts} contacts`);
    // visitor i's first event is g = i, its last g = i + (E - 1)·V (clamped to N)
    await db.query(
      `INSERT INTO visitors (org_id, core_id, roaming_id, corex_id, person_id, first_seen, last_seen, user_agent, location, name)
       SELECT $1::bigint, c, 'r' || left(c, 15), NULL, $5::bigint + i,
              ${at('i')}, ${at(`least(i + ($6::bigint - 1) * $7::bigint, $4::bigint)`)},
              'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
              jsonb_build_object('country_code', 'DE', 'region', 'Berlin', 'city', 'Berlin', 'latitude', 52.52, 'longitude', 13.405, 'timezone', 'Europe/Berlin'),
              CASE WHEN i % 20 = 0 THEN 'Stored Visitor ' || i END
       FROM (SELECT i, ${core('i')} AS c FROM generate_series(1, $7::bigint) AS i) AS s`,
      [...params, personBase, perVisitor, V],
    );
    log(`   ${V.toLocaleString('en-US')} visitors (${secs(tOthers)} s)`);
    await db.query(
      `INSERT INTO persons (org_id, id, last_view, last_cart_product_id, last_cart_url, last_cart_at)
       SELECT $1::bigint, $2::bigint + i, jsonb_build_array(jsonb_build_object('url', 'https://bench-shop.example/p/' || (i % 5000), 'at', now())),
              1234, 'https://bench-shop.example/cart', now()
       FROM generate_series(4, $3::bigint, 4) AS i`,
      [org, personBase, V],
    );
    await db.query(
      `INSERT INTO contacts (org_id, id, type, value, person_id)
       SELECT $1::bigint, $2::bigint + j, 'EMAIL', 'stored-' || (20 * j) || '@bench.example', $3::bigint + 20 * j
       FROM generate_series(1, $4::bigint) AS j`,
      [org, contactBase, personBase, contacts],
    );
    await db.query(
      `INSERT INTO visitor_contacts (org_id, core_id, contact_id, verified)
       SELECT $1::bigint, ${core('(20 * j)')}, $5::bigint + j, false FROM generate_series(1, $6::bigint) AS j`,
      [...params, contactBase, contacts],
    );
    const othersSeconds = secs(tOthers);
    log(`   visitors, persons and contacts written (${othersSeconds} s)`);

    const tEvents = Date.now();
    for (let done = 0; done < events; done += CHUNK) {
      const hi = Math.min(events, done + CHUNK);
      await db.query(
        `INSERT INTO events (org_id, received_at, name, core_id, roaming_id, corex_id, body)
         SELECT $1::bigint, ${at('g')}, name, c, 'r' || left(c, 15), NULL,
                CASE name
                  WHEN 'updatecart' THEN jsonb_build_object('cart_url', 'https://bench-shop.example/cart', 'product_id', 1234, 'cart_value', 49.5,
                    'line_items', jsonb_build_array(jsonb_build_object('quantity', 1, 'title', 'Linen shirt', 'line_price', 49.5, 'id', 'li-1',
                      'product_id', 1234, 'image_url', 'https://cdn.bench-shop.example/1234.jpg')))
                  ELSE jsonb_build_object('page', 'https://bench-shop.example/collections/summer?page=' || (g % 50))
                END
         FROM (SELECT g, ${core('(1 + (g - 1) % $7::bigint)')} AS c,
                      (ARRAY['view','view','view','view','view','view','productview','productview','updatecart','categoryview'])[1 + g % 10] AS name
               FROM generate_series($5::bigint, $6::bigint) AS g) AS s
         ORDER BY c`,
        [...params, done + 1, hi, V],
      );
      log(`   ${hi.toLocaleString('en-US')} / ${events.toLocaleString('en-US')} events (${secs(tEvents)} s)`);
    }
    const eventsSeconds = secs(tEvents);

    const tVacuum = Date.now();
    for (const t of ['events', 'visitors', 'persons', 'contacts', 'visitor_contacts']) await db.query(`VACUUM (ANALYZE) ${t}`);
    const vacuumSeconds = secs(tVacuum);
    log(`   VACUUM (ANALYZE) of the loaded tables (${vacuumSeconds} s)`);
    const tCheckpoint = Date.now();
    await db.query('CHECKPOINT').catch((e: Error) => log(`   no CHECKPOINT (${e.message})`));
    const checkpointSeconds = secs(tCheckpoint);

    const size = async (q: string) => Number((await db.query<{ b: string }>(q)).rows[0]!.b);
    const facts: StoredFacts = {
      events,
      visitors: V,
      persons_with_profile: Math.floor(V / 4),
      contacts,
      seconds: { events: eventsSeconds, others: othersSeconds, vacuum: vacuumSeconds, checkpoint: checkpointSeconds, total: secs(t0) },
      database_bytes: await size('SELECT pg_database_size(current_database()) AS b'),
      events_bytes: await size(
        `SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint AS b FROM pg_inherits WHERE inhparent = 'events'::regclass`,
      ),
      visitors_bytes: await size(`SELECT pg_total_relation_size('visitors') AS b`),
    };
    const gb = (b: number) => (b / 2 ** 30).toFixed(2);
    log(
      `   loaded in ${facts.seconds.total} s: database ${gb(facts.database_bytes)} GiB ` +
        `(events with indexes ${gb(facts.events_bytes)} GiB, visitors ${gb(facts.visitors_bytes)} GiB)`,
    );
    return facts;
  } finally {
    await db.end();
  }
}
