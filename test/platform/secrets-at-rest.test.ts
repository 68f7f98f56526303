// Issue 12 point 6, secrets at rest: "the JWT key and organisation tokens sit
// in clear in the database". After start, neither is readable in clear in
// the database (sealed with the same key as integration secrets), everything
// still works (registration answers, organisation reads, learning events by
// token, bearer tokens), and a database made by the old code (plaintext rows)
// is sealed when a new version starts on it: migrated, then sealed, by the
// same start path `serve` uses.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { type Kysely, sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { type DbHandle, migrate } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { sealSecretsAtRest } from '../../src/platform/sealing.service.ts';
import { Cipher } from '../../src/platform/secrets.service.ts';
import { organisationTokenHash } from '../../src/platform/registration.service.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { ApiClient, type BodyOf } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { databaseAtMigration, type OldSchemaDatabase } from '../support/old-schema.ts';
import { newAccount, newMerchant } from '../support/accounts.ts';

const KEY = Buffer.alloc(32, 9);

/** Every text value of every row of these tables, as one string. */

async function dump(db: Kysely<any>, tables: string[]): Promise<string> {
  let out = '';
  for (const t of tables) {
    const { rows } = await sql<{ r: unknown }>`SELECT row_to_json(x) AS r FROM ${sql.table(t)} AS x`.execute(db);
    out += JSON.stringify(rows.map((r) => r.r));
  }
  return out;
}

describe('secrets at rest', function () {
  this.timeout(60_000);

  describe('a running server', () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer({ TRACKWAY_SECRET_KEY: KEY.toString('base64') });
    });
    after(() => srv.stop());

    it('keeps no organisation token and no JWT key in clear in the database, and everything still works', async () => {
      const account = await newAccount(srv);
      const merchants = [await newMerchant(srv, account), await newMerchant(srv, account)];
      const db = srv.database.handle.db;

      const settings = await db.selectFrom('settings').selectAll().execute();
      expect(settings.map((s) => s.key))
        .to.include('jwt_secret_enc')
        .and.not.include('jwt_secret');
      const jwtKey = new Cipher(KEY).decrypt(settings.find((s) => s.key === 'jwt_secret_enc')!.value);
      expect(jwtKey).to.have.length.above(40);

      const rows = await db.selectFrom('organisations').select(['id', 'token', 'token_enc', 'token_hash']).execute();
      for (const r of rows) {
        expect(r.token, `organisation ${r.id}`).to.equal(null);
        expect(r.token_enc).to.be.a('string');
      }
      const everything = await dump(db, ['settings', 'organisations', 'users', 'integrations']);
      expect(everything).to.not.include(jwtKey);
      for (const m of merchants) expect(everything).to.not.include(m.organisation.token);

      // the bearer token the account got is signed with that key and works
      expect(account.token.split('.')).to.have.length(3);
      // organisation reads decrypt, the registration answer had the token, learning events find it by its hash
      for (const m of merchants) {
        const one = await srv.api.get<BodyOf<'getOrganisation'>>(`/v1/rest/acme/organisations/${m.organisation.id}`, { token: account.token });
        expect(one.body.token).to.equal(m.organisation.token);
        const learn = await srv.api.post('/rest/v1/learn/event', { org_token: m.organisation.token, eventName: 'sealed', eventVal: 'x' });
        expect(learn.status, learn.text).to.equal(200);
      }
      const list = await srv.api.get<BodyOf<'listOrganisations'>>('/v1/rest/acme/organisations', { token: account.token });
      expect(list.body.items.map((o: { token: string }) => o.token).sort()).to.deep.equal(merchants.map((m) => m.organisation.token).sort());
    });
  });

  describe('a database made by the old code (JWT key and organisation tokens in clear)', () => {
    let old: OldSchemaDatabase;
    let handle: DbHandle;
    let running: RunningServer | undefined;
    const CLEAR_JWT = 'old-clear-jwt-key-made-by-the-old-code-0123456789';
    const CLEAR_TOKEN = 'OldClearOrganisationToken_0123456789abcdefgh';

    before(async () => {
      // the schema as the old code left it: every migration before this change
      old = await databaseAtMigration('oldcode', '2026-11-22T0400_event_retention');
      handle = old.handle;
      expect(fs.existsSync(fileURLToPath(new URL('../../src/db/migrations/2026-11-23T0300_sealed_secrets.ts', import.meta.url)))).to.equal(true);
      // what the old code wrote: the JWT key and an organisation token in clear
      await sql`INSERT INTO settings (key, value) VALUES ('jwt_secret', ${CLEAR_JWT})`.execute(handle.db);
      const user = await sql<{ id: number }>`
        INSERT INTO users (email, email_key, password_hash, platform_name) VALUES ('old@platform.example', 'old@platform.example', NULL, 'acme') RETURNING id
      `.execute(handle.db);
      const userId = user.rows[0]!.id;
      const org = await sql<{ id: number }>`
        INSERT INTO organisations (token, token_hash, domain, domain_key, created_by)
        VALUES (${CLEAR_TOKEN}, ${organisationTokenHash(CLEAR_TOKEN)}, 'old.shop.example', 'old.shop.example', ${userId}) RETURNING id
      `.execute(handle.db);
      await sql`INSERT INTO organisation_members (user_id, org_id, role) VALUES (${userId}, ${org.rows[0]!.id}, 'platform')`.execute(handle.db);
    });

    after(async () => {
      await running?.close();
      await old.drop();
    });

    it('is migrated and sealed on start; the old key still verifies the old bearer tokens, the old token still works', async () => {
      const before = await dump(handle.db, ['settings', 'organisations']);
      expect(before).to.include(CLEAR_JWT).and.include(CLEAR_TOKEN);
      // a bearer token the old code issued (signed with the clear key, no session version)
      const now = Math.floor(Date.now() / 1000);
      const userId = (await handle.db.selectFrom('users').select('id').where('email_key', '=', 'old@platform.example').executeTakeFirstOrThrow()).id;
      const oldBearer = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer('trackway')
        .setAudience('acme')
        .setSubject(String(userId))
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(new TextEncoder().encode(CLEAR_JWT));

      // what `serve` does: migrate, then start (which seals)
      const applied = await migrate(handle.db);
      expect(applied).to.include('2026-11-23T0300_sealed_secrets');
      const config = loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
        TRACKWAY_SECRET_KEY: KEY.toString('base64'),
        LOG_LEVEL: 'silent',
        TRACKWAY_VALIDATE_RESPONSES: 'true',
      });
      running = await startOnDatabase(config, handle, createLogger('silent'), { dispatcher: false });

      const after = await dump(handle.db, ['settings', 'organisations', 'users']);
      expect(after).to.not.include(CLEAR_JWT);
      expect(after).to.not.include(CLEAR_TOKEN);
      const settings = await handle.db.selectFrom('settings').selectAll().execute();
      expect(settings.map((s) => s.key)).to.deep.equal(['jwt_secret_enc']);
      expect(new Cipher(KEY).decrypt(settings[0]!.value)).to.equal(CLEAR_JWT);

      const api = new ApiClient(running.url);
      const orgs = await api.get<BodyOf<'listOrganisations'>>('/v1/rest/acme/organisations', { token: oldBearer });
      expect(orgs.status, orgs.text).to.equal(200);
      expect(orgs.body.items.map((o: { token: string }) => o.token)).to.deep.equal([CLEAR_TOKEN]);
      const learn = await api.post('/rest/v1/learn/event', { org_token: CLEAR_TOKEN, eventName: 'after-upgrade', eventVal: 'x' });
      expect(learn.status, learn.text).to.equal(200);

      // sealing again (the next start, or another process starting at the same time) changes nothing
      const sealedOnce = await dump(handle.db, ['settings', 'organisations']);
      expect(await sealSecretsAtRest(handle.db, new Cipher(KEY))).to.deep.equal({ jwtKey: false, organisationTokens: 0 });
      expect(await dump(handle.db, ['settings', 'organisations'])).to.equal(sealedOnce);
    });

    it('stops with a clear reason when started with another secret key than the one the secrets were sealed with', async () => {
      await running?.close();
      running = undefined;
      const config = loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
        TRACKWAY_SECRET_KEY: Buffer.alloc(32, 1).toString('base64'),
        LOG_LEVEL: 'silent',
      });
      let err: unknown;
      await startOnDatabase(config, handle, createLogger('silent'), { dispatcher: false }).catch((e: unknown) => (err = e));
      expect((err as Error | undefined)?.message).to.match(/cannot be decrypted: TRACKWAY_SECRET_KEY/);
    });
  });
});
