// The hot paths stay distributable by organisation (Citus, docs/scaling.md
// "Stage 2") without Citus: while this test drives ingest, identify and
// dispatch, and privacy requests (export, erase with its notices and their
// redaction, unsuppress) and visitor retention, through the running server
// (dispatcher and privacy runner on, a real receiver),
// every statement the server sends is recorded by a hook on pg's client,
// and each one that touches a tenant table must name its organisation
// (`org_id`, or `id` for organisations) — under Citus such a statement goes to
// one shard. A statement that spans organisations on purpose carries
// ALL_ORGANISATIONS (src/db/database.ts) and is listed here by what it is. A
// statement marked PLAIN_POSTGRES is sent only on plain PostgreSQL, beside a
// Citus counterpart that names its organisations: accepted here without one,
// and a failure if a Citus cluster ever receives it.
import { expect } from 'chai';
import { sql } from 'kysely';
import pg from 'pg';
import { ALL_ORGANISATIONS, PLAIN_POSTGRES } from '../../src/db/database.ts';
import { TENANT_TABLES } from '../../src/db/distribution.ts';
import { addSuppression } from '../../src/privacy/suppression.repository.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { onCitusCluster } from '../support/citus.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

const TENANT = new Map(TENANT_TABLES.map((t) => [t.table, t.column]));

/** Tenant tables a statement reads or writes (FROM, JOIN, INTO, UPDATE, USING). */
export function tenantTablesOf(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/\b(?:from|join|into|update|using)\s+(?:only\s+)?"?([a-z_]+)"?/gi)) {
    const t = m[1]!.toLowerCase();
    if (TENANT.has(t)) found.add(t);
  }
  return [...found];
}

/** The organisation compared with a parameter (`org_id = $1`, `org_id IN ($1, …)`, `org_id = ANY ($1)`). */
const ORG_PARAM = /\borg_id"?\s*(=|in\b)\s*(any\s*)?\(?\s*\$\d+/i;

/**
 * Whether the statement is scoped by organisation: it compares the
 * organisation column with a parameter (`org_id = $1`, `org_id IN ($1, …)`,
 * `org_id = ANY ($1)`; `id = $1` for organisations), or it inserts rows that
 * each carry their organisation (`INSERT INTO t (org_id, …)`).
 */
export function namesOrganisation(text: string, tables: string[]): boolean {
  const insertsWithOrg = /^\s*(\/\*[^*]*\*\/\s*)*(with\b[\s\S]*?)?insert\s+into\s+"?\w+"?\s*(as\s+\w+\s*)?\([^)]*\borg_id\b/i.test(text);
  const orgParam = ORG_PARAM.test(text);
  const idParam = /\bid"?\s*(=|in\b)\s*(any\s*)?\(?\s*\$\d+/i.test(text);
  return tables.every((t) => (TENANT.get(t) === 'id' ? idParam : orgParam || insertsWithOrg));
}

/**
 * A locking read (FOR UPDATE/SHARE) must name one organisation (`org_id = $n`):
 * Citus runs it only on one shard, and refuses it over rows that come from a
 * parameter or a join spanning organisations.
 */
export function locksOneOrganisation(text: string): boolean {
  if (!/\bfor\s+(no\s+key\s+)?(update|share)\b/i.test(text)) return true;
  return /\borg_id"?\s*=\s*\$\d+/i.test(text) && !/\borg_id"?\s*(in\b|=\s*any)/i.test(text);
}

/** What is not IMMUTABLE in PostgreSQL and so refused by Citus where the shard computes it. */
const NOT_IMMUTABLE =
  /\b(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|to_char|date_trunc|make_interval|nextval)\s*\(|\b(current_timestamp|current_date|localtimestamp)\b|[-+]\s*(interval\b|\$\d+\s*::\s*interval)/i;

/**
 * The parts of a write that Citus sends to the shards to compute (ON CONFLICT,
 * UPDATE … SET, RETURNING) use only immutable functions: times come as
 * parameters, an age is `timestamptz - timestamptz` compared with an interval.
 * Returns the offending part, or null.
 */
export function nonImmutableInWrite(text: string): string | null {
  const parts: string[] = [];
  const onConflict = /\bon\s+conflict\b([\s\S]*?)(\breturning\b|$)/i.exec(text);
  if (onConflict) parts.push(onConflict[1]!);
  const set = /^\s*(\/\*[^*]*\*\/\s*)*update\b[\s\S]*?\bset\b([\s\S]*?)(\bfrom\b|\bwhere\b|\breturning\b|$)/i.exec(text);
  if (set) parts.push(set[2]!);
  const returning = /\breturning\b([\s\S]*)$/i.exec(text);
  if (returning && /^\s*(\/\*[^*]*\*\/\s*)*(with\b[\s\S]*?)?(insert|update|delete)\b/i.test(text)) parts.push(returning[1]!);
  return parts.find((p) => NOT_IMMUTABLE.test(p)) ?? null;
}

/** An organisation column equal to another table's (`vc.org_id = c.org_id`). */
const ORG_CORRELATED = /"?\w+"?\."?org_id"?\s*=\s*"?\w+"?\."?org_id\b/i;

/**
 * A subquery (`(SELECT …)`: a sublink such as `EXISTS (…)` or `ARRAY(…)`, a
 * derived table, a CTE body) that reads a tenant table names its organisation
 * as a parameter itself, not only through the outer row (`vc.org_id =
 * c.org_id`): Citus does not carry an organisation into a subquery it plans
 * apart (a sublink in the select list), and ran such a read of contacts on
 * all 32 shards (docs/scaling.md, the run of 26 November). Returns the
 * offending subqueries.
 */
export function subqueriesWithoutOrganisation(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/\(\s*select\b/gi)) {
    let depth = 0;
    let end = m.index;
    for (; end < text.length; end++) {
      if (text[end] === '(') depth++;
      else if (text[end] === ')' && --depth === 0) break;
    }
    const sub = text.slice(m.index + 1, end);
    if (tenantTablesOf(sub).length > 0 && ORG_CORRELATED.test(sub) && !ORG_PARAM.test(sub)) found.push(sub.replace(/\s+/g, ' ').slice(0, 300));
  }
  return found;
}

describe('hot-path statements are scoped by organisation (no Citus needed)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;
  const seen: { db: string; text: string }[] = [];
  let recording = false;
  const original = pg.Client.prototype.query;
  /** on a Citus cluster (TEST_CITUS_WORKERS): the recorded statements Citus ran on more than one shard, by its own warning */
  const citus = onCitusCluster();
  const multiShard: string[] = [];
  const sending = new WeakMap<pg.Client, string>();
  const warned = new WeakSet<pg.Client>();

  before(async () => {
    // before any connection is made: the pool's clients bind query when they connect
    const hook = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string };
      const text = typeof first === 'string' ? first : first?.text;
      const ours = srv !== undefined && this.database === srv.database.name;
      if (ours && citus && !warned.has(this)) {
        warned.add(this);
        // Citus warns this session of every statement it splits into several shards' tasks
        this.on('notice', (msg: { message?: string }) => {
          if (recording && /multi-task query/.test(msg.message ?? '')) multiShard.push(sending.get(this) ?? '');
        });
        (original as (...a: unknown[]) => Promise<unknown>).apply(this, ['SET citus.multi_task_query_log_level = warning']).catch(() => {});
      }
      if (ours && typeof text === 'string') sending.set(this, text);
      if (recording && ours && typeof text === 'string') seen.push({ db: this.database!, text });
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    };
    pg.Client.prototype.query = hook as typeof pg.Client.prototype.query;
    receiver = await TestReceiver.start();
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true, privacy: { sweepMs: 100 } });
    account = await newAccount(srv);
  });

  /**
   * On a Citus cluster, every recorded statement but ALL_ORGANISATIONS ones
   * went to one shard (on one PostgreSQL there is nothing to see); `ofTheServer`
   * leaves out the test's own polls.
   */
  function checkOneShard(ofTheServer: (text: string) => boolean = () => true): void {
    expect(
      multiShard.filter((s) => !s.includes(ALL_ORGANISATIONS) && ofTheServer(s)).map((s) => s.replace(/\s+/g, ' ').slice(0, 300)),
      'statements Citus ran on several shards',
    ).to.deep.equal([]);
    multiShard.length = 0;
  }
  after(async () => {
    pg.Client.prototype.query = original;
    await srv.stop();
    await receiver.close();
  });

  it('names the organisation in every statement of ingest, identify and dispatch that touches a tenant table', async () => {
    const { id: org, domain } = (await newMerchant(srv, account)).organisation;
    await newWebhook(srv, account, org, { endpoint: receiver.url });
    // a suppression list: every batch of this organisation looks its items up in it
    const suppressed = { type: 'email' as const, value: `${unique('s')}@example.com` };
    await addSuppression(srv.deps.db, org, srv.deps.subjects.hash(org, suppressed), 1, new Date());
    srv.deps.organisations.invalidate(org);
    recording = true;
    const v = { roaming: unique('r'), core: unique('c') };
    const path = (name: string) => `/jsv1/${org}/${v.roaming}/${v.core}/null/event/${name}`;
    const view = await srv.api.post(path('productview'), { product_id: 7, price: 1, product_url: `https://${domain}/p/7` });
    expect(view.status, view.text).to.equal(202);
    const cart = await srv.api.post(path('updatecart'), { product_id: 7, cart_url: `https://${domain}/cart` });
    expect(cart.status, cart.text).to.equal(202);
    // a second device of the same person (a corex_id): the batch locks the visitors it may stitch
    const phone = await srv.api.post(`/jsv1/${org}/${v.roaming}/${unique('c')}/${v.core}-x/event/view`, { page: `https://${domain}/` });
    expect(phone.status, phone.text).to.equal(202);
    const again = await srv.api.post(`/jsv1/${org}/${v.roaming}/${v.core}/${v.core}-x/event/view`, { page: `https://${domain}/` });
    expect(again.status, again.text).to.equal(202);
    const id = await srv.api.get(`/jsv1/identify/${org}/${v.roaming}/${v.core}/${b64url({ email: `${v.core}@example.com` })}`);
    expect(id.status, id.text).to.equal(200);
    // privacy: the suppressed email identifies without a contact, a GPC request links nothing; then an exported event checks its contacts
    const quiet = await srv.api.get(`/jsv1/identify/${org}/${v.roaming}/${unique('c')}/${b64url({ email: suppressed.value })}`);
    expect(quiet.status, quiet.text).to.equal(200);
    const gpc = await srv.api.post(
      path('productview'),
      { product_id: 8, price: 1, product_url: `https://${domain}/p/8` },
      { headers: { 'sec-gpc': '1' } },
    );
    expect(gpc.status, gpc.text).to.equal(202);
    const exported = await srv.api.post(path('view'), { page: `https://${domain}/after` });
    expect(exported.status, exported.text).to.equal(202);
    // a known bot: answered, not stored, counted per organisation (written by the flush that drain() forces)
    const bot = await srv.api.post(
      path('view'),
      { page: `https://${domain}/` },
      { headers: { 'user-agent': 'Googlebot/2.1 (+http://www.google.com/bot.html)' } },
    );
    expect(bot.status, bot.text).to.equal(202);
    await srv.deps.ingest.drain();
    // delivered by the dispatcher, then its outcome recorded (no poll of ours: it would be recorded too)
    await receiver.waitFor(1, 20_000);
    await new Promise((r) => setTimeout(r, 2_000));
    recording = false;

    const statements = seen.map((s) => s.text);
    expect(
      statements.some((s) => /for\s+update/i.test(s) && tenantTablesOf(s).includes('visitors')),
      'no batch locked visitors',
    ).to.equal(true);
    checkStatements(statements, ['visitors', 'events', 'contacts', 'deliveries', 'delivery_attempts', 'privacy_suppressions', 'bot_requests']);
    checkOneShard();
  });

  it('names the organisation in every statement of privacy requests, erasure, export, notices and retention', async () => {
    const { id: org, domain } = (await newMerchant(srv, account)).organisation;
    await newWebhook(srv, account, org, { endpoint: receiver.url });
    const platformPath = `/v1/rest/${account.platform}/organisations/${org}`;
    const patched = await srv.api.request('PATCH', platformPath, { body: { visitor_retention_days: 30 }, token: account.token });
    expect(patched.status, patched.text).to.equal(200);
    const email = `${unique('p')}@example.com`;
    const [a, b, old] = [0, 1, 2].map(() => ({ roaming: unique('r'), core: unique('c') }));
    const corex = unique('x');
    const ev = (v: { roaming: string; core: string }, name: string, body: unknown, x = 'null') =>
      srv.api.post(`/jsv1/${org}/${v.roaming}/${v.core}/${x}/event/${name}`, body);
    expect((await ev(a!, 'view', { page: `https://${domain}/` }, corex)).status).to.equal(202);
    expect((await ev(b!, 'view', { page: `https://${domain}/` }, corex)).status).to.equal(202);
    expect((await srv.api.get(`/jsv1/identify/${org}/${a!.roaming}/${a!.core}/${b64url({ email, name: 'Pat' })}`)).status).to.equal(200);
    expect((await ev(b!, 'productview', { product_id: 9, price: 1, product_url: `https://${domain}/p/9` })).status).to.equal(202);
    expect((await ev(b!, 'updatecart', { product_id: 9, cart_url: `https://${domain}/cart` })).status).to.equal(202);
    const oldEmail = `${unique('o')}@example.com`;
    expect((await srv.api.get(`/jsv1/identify/${org}/${old!.roaming}/${old!.core}/${b64url({ email: oldEmail })}`)).status).to.equal(200);
    await srv.deps.db
      .updateTable('visitors')
      .set({ first_seen: new Date(Date.now() - 50 * 86_400_000), last_seen: new Date(Date.now() - 40 * 86_400_000) })
      .where('org_id', '=', org)
      .where('core_id', '=', old!.core)
      .execute();

    seen.length = 0;
    recording = true;
    const run = async (body: unknown) => {
      const r = await srv.api.post<BodyOf<'createPrivacyRequest'>>(`${platformPath}/privacy-requests`, body, { token: account.token });
      expect(r.status, r.text).to.equal(202);
      for (;;) {
        const g = await srv.api.get<BodyOf<'getPrivacyRequest'>>(`${platformPath}/privacy-requests/${r.body.id}`, { token: account.token });
        if (g.body.status === 'done' || g.body.status === 'failed') return g.body;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    expect((await run({ type: 'export', subject: { email } })).status).to.equal('done');
    const before = receiver.requests.length;
    expect((await run({ type: 'erase', subject: { core_id: b!.core }, suppress: true })).status).to.equal('done');
    expect((await run({ type: 'unsuppress', subject: { core_id: b!.core } })).status).to.equal('done');
    expect((await srv.api.get(`${platformPath}/privacy-requests?limit=2`, { token: account.token })).status).to.equal(200);
    expect((await srv.api.get(`${platformPath}/privacy-suppressions`, { token: account.token })).status).to.equal(200);
    // the erasure notice delivered, then redacted by the sweep
    await receiver.waitFor(before + 1, 20_000);
    for (;;) {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM deliveries WHERE org_id = ${org} AND kind = 'erased' AND body::jsonb ? 'contact'
      `.execute(srv.deps.db);
      if (rows[0]!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await srv.privacy!.retain();
    recording = false;
    const statements = seen.map((s) => s.text).filter((t) => !/count\(\*\)::int AS n FROM deliveries/.test(t));
    checkStatements(statements, [
      'privacy_requests',
      'privacy_suppressions',
      'visitors',
      'events',
      'contacts',
      'visitor_contacts',
      'persons',
      'products',
      'deliveries',
      'delivery_attempts',
    ]);
    checkOneShard((t) => !/count\(\*\)::int AS n FROM deliveries/.test(t));
  });

  /** Every statement that touches a tenant table names its organisation (or says it spans them), locks one, and computes nothing non-immutable on shards. */
  function checkStatements(statements: string[], mustTouch: string[]): void {
    const touched = new Set(statements.flatMap(tenantTablesOf));
    for (const t of mustTouch) {
      expect([...touched], `no statement touched ${t}: the test drove nothing`).to.include(t);
    }
    if (citus) {
      expect(
        statements.filter((s) => s.includes(PLAIN_POSTGRES)).map((s) => s.replace(/\s+/g, ' ').slice(0, 300)),
        'plain PostgreSQL statements sent to a Citus cluster',
      ).to.deep.equal([]);
    }
    // on plain PostgreSQL a PLAIN_POSTGRES statement has a Citus counterpart that names its organisations
    const spans = (s: string) => s.includes(ALL_ORGANISATIONS) || s.includes(PLAIN_POSTGRES);
    const unscoped = statements.filter((s) => {
      const tables = tenantTablesOf(s);
      return tables.length > 0 && !spans(s) && !namesOrganisation(s, tables);
    });
    expect(unscoped.map((s) => s.replace(/\s+/g, ' ').slice(0, 300))).to.deep.equal([]);
    const tenant = statements.filter((s) => tenantTablesOf(s).length > 0);
    // Citus's rule: a PLAIN_POSTGRES statement never reaches a cluster (above)
    const wideLocks = tenant.filter((s) => !s.includes(PLAIN_POSTGRES) && !locksOneOrganisation(s));
    expect(
      wideLocks.map((s) => s.replace(/\s+/g, ' ').slice(0, 300)),
      'locking reads over more than one organisation',
    ).to.deep.equal([]);
    expect(
      tenant.filter((s) => !spans(s)).flatMap(subqueriesWithoutOrganisation),
      'subqueries over a tenant table that take their organisation only from the outer row',
    ).to.deep.equal([]);
    const computedOnShards = tenant.filter((s) => nonImmutableInWrite(s) !== null);
    expect(
      computedOnShards.map((s) => s.replace(/\s+/g, ' ').slice(0, 300)),
      'non-immutable functions in ON CONFLICT, UPDATE … SET or RETURNING',
    ).to.deep.equal([]);
  }

  it('the check itself: flags locking reads over several organisations and non-immutable functions in writes', () => {
    // the corex lock of the recorded run: a CTE over the batch's jsonb rows
    const corexCte = `WITH incoming AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(org_id bigint, core_id text)),
      before AS (SELECT v.org_id FROM visitors v JOIN incoming i ON i.org_id = v.org_id AND i.core_id = v.core_id FOR UPDATE OF v)
      INSERT INTO visitors AS v (org_id, core_id) SELECT org_id, core_id FROM incoming`;
    expect(locksOneOrganisation(corexCte)).to.equal(false);
    expect(locksOneOrganisation('select core_id from visitors where org_id = ANY($1) for update')).to.equal(false);
    expect(locksOneOrganisation('select core_id, corex_id from visitors where org_id = $1 and core_id = any($2::text[]) for update')).to.equal(true);
    expect(locksOneOrganisation('select 1 from visitors where org_id = $1')).to.equal(true);
    // the 'worth a write' age that Citus refused: timestamptz - interval in ON CONFLICT … WHERE
    const stale = `INSERT INTO visitors AS v (org_id, core_id) SELECT * FROM x ON CONFLICT (org_id, core_id) DO UPDATE SET last_seen = EXCLUDED.last_seen
      WHERE v.last_seen < EXCLUDED.last_seen - interval '60 seconds' RETURNING v.org_id`;
    expect(nonImmutableInWrite(stale)).to.not.equal(null);
    expect(
      nonImmutableInWrite(
        stale.replace("v.last_seen < EXCLUDED.last_seen - interval '60 seconds'", "EXCLUDED.last_seen - v.last_seen > interval '60 seconds'"),
      ),
    ).to.equal(null);
    expect(nonImmutableInWrite("update deliveries set next_at = next_at + interval '1 minute' where org_id = $1")).to.not.equal(null);
    expect(nonImmutableInWrite('update deliveries set next_at = $2 where org_id = $1 and next_at < now()')).to.equal(null);
    expect(nonImmutableInWrite("insert into organisations (id) values ($1) returning to_char(created_at, 'YYYY')")).to.not.equal(null);
    expect(nonImmutableInWrite("select to_char(created_at, 'YYYY') from organisations where id = $1")).to.equal(null);
  });

  it('the check itself: flags a statement without its organisation and accepts the scoped forms', () => {
    expect(tenantTablesOf('select * from "deliveries" where "id" = $1')).to.deep.equal(['deliveries']);
    expect(namesOrganisation('select * from "deliveries" where "id" = $1', ['deliveries'])).to.equal(false);
    expect(namesOrganisation('update deliveries set x = 1 where org_id = $1 and id = $2', ['deliveries'])).to.equal(true);
    expect(namesOrganisation('select * from "organisations" where "id" = $1', ['organisations'])).to.equal(true);
    expect(namesOrganisation('select * from organisations where domain_key = $1', ['organisations'])).to.equal(false);
    expect(tenantTablesOf('select 1 from organisation_members where user_id = $1')).to.deep.equal([]);
    // a join on org_id between two tenant tables, or a negative filter, is no scope
    expect(namesOrganisation('select 1 from deliveries d join integrations i on i.org_id = d.org_id', ['deliveries', 'integrations'])).to.equal(
      false,
    );
    expect(namesOrganisation('select org_id from deliveries where org_id <> ALL ($1)', ['deliveries'])).to.equal(false);
    expect(namesOrganisation('/*prepare*/ INSERT INTO events (org_id, name) SELECT * FROM jsonb_to_recordset($1)', ['events'])).to.equal(true);
    expect(namesOrganisation('select * from "deliveries" where "org_id" in ($1, $2) and "id" = $3', ['deliveries'])).to.equal(true);
  });

  it('the check itself: flags a subquery over a tenant table that takes its organisation only from the outer row', () => {
    // the contacts read Citus ran on all 32 shards: the links' organisation from the contact's row
    const correlated = `select "c"."person_id", ARRAY((select "vc"."core_id" from "visitor_contacts" as "vc" where "vc"."org_id" = "c"."org_id"
      and "vc"."contact_id" = "c"."id")) as "verified_by" from "contacts" as "c" where "c"."org_id" = $1 and c.person_id = ANY($2::bigint[])`;
    expect(subqueriesWithoutOrganisation(correlated)).to.have.length(1);
    expect(subqueriesWithoutOrganisation(correlated.replace('"vc"."org_id" = "c"."org_id"', '"vc"."org_id" = $3'))).to.deep.equal([]);
    // a subquery over the statement's own rows (a CTE), not a tenant table, may correlate
    expect(
      subqueriesWithoutOrganisation(
        'with chosen as (select 1) select 1 from deliveries p where p.org_id = $1 and not exists (select 1 from chosen c where c.org_id = p.org_id)',
      ),
    ).to.deep.equal([]);
  });
});
