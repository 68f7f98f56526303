// `trackway privacy erase|export` (README "Privacy"): the operator's command,
// run as a child process against the test database, records the request as
// the API does (requested_via cli) and runs it to its end: an erase prints
// its counts, an export the JSON document on stdout. Bad usage and an
// unknown organisation answer exit code 2 with a clear message.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { newVisitor, tracker } from './helpers.ts';
import type { BodyOf } from '../support/client.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('privacy: CLI', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let account: Account;

  before(async () => {
    // no runner in the server: the command runs its requests itself
    srv = await startTestServer({}, { dispatcher: false, jobs: false });
    account = await newAccount(srv);
  });
  after(() => srv?.stop());

  function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
    const env = {
      ...process.env,
      DATABASE_URL: srv.database.url,
      TRACKWAY_SECRET_KEY: srv.config.secretKey,
      TRACKWAY_DATA_DIR: srv.config.dataDir,
      LOG_LEVEL: 'warn',
    };
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'scripts/trackway.js'), 'privacy', ...args], { env, cwd: ROOT });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (code) => resolve({ code, out, err }));
    });
  }

  it('exports a person (the document on stdout), then erases it with --suppress and prints the counts', async () => {
    const { id: orgId, domain } = (await newMerchant(srv, account)).organisation;
    const t = tracker(srv, orgId);
    const v = newVisitor();
    const email = `${unique('cli')}@example.com`;
    await t.identify(v, { email, name: 'Cli Person' });
    await t.event(v, 'view', { page: `https://${domain}/a` });
    await t.event(v, 'view', { page: `https://${domain}/b` });

    const exported = await cli('export', '--org', String(orgId), '--core-id', v.core);
    expect(exported.code, exported.err).to.equal(0);
    const doc = JSON.parse(exported.out);
    expect(doc).to.include({ org_id: orgId, subject_type: 'core_id', found: true });
    expect(doc.contacts.map((c: { value: string }) => c.value)).to.deep.equal([email]);
    expect(doc.events).to.have.length(2);
    expect(exported.err).to.match(/^exported: 1 person, 1 visitor, 1 contact, 2 events, 0 deliveries \(privacy request \d+ of organisation \d+\)\n$/);

    const erased = await cli('erase', '--org', String(orgId), '--email', email.toUpperCase(), '--suppress');
    expect(erased.code, erased.err).to.equal(0);
    expect(erased.out).to.match(/^erased: 1 person, 1 visitor, 1 contact, 2 events, 0 deliveries \(privacy request \d+ of organisation \d+\)\n$/);
    const r = await srv.api.get(`/v1/rest/${account.platform}/organisations/${orgId}/visitors/${v.core}`, { token: account.token });
    expect(r.status).to.equal(404);
    const requests = await srv.api.get<BodyOf<'listPrivacyRequests'>>(`/v1/rest/${account.platform}/organisations/${orgId}/privacy-requests`, {
      token: account.token,
    });
    expect(requests.body.items.map((x) => [x.type, x.status, x.requested_via, x.requested_by])).to.deep.equal([
      ['erase', 'done', 'cli', null],
      ['export', 'done', 'cli', null],
    ]);
    const suppressed = await srv.api.get<BodyOf<'listPrivacySuppressions'>>(
      `/v1/rest/${account.platform}/organisations/${orgId}/privacy-suppressions`,
      { token: account.token },
    );
    expect(suppressed.body.items).to.have.length(1);
  });

  it('answers bad usage and an unknown organisation with exit code 2 and says why', async () => {
    const cases: [string[], RegExp][] = [
      [['erase', '--email', 'a@b.co'], /needs --org/],
      [['erase', '--org', '1'], /exactly one of --email, --phone, --core-id/],
      [['erase', '--org', '1', '--email', 'a@b.co', '--phone', '+4420'], /exactly one of/],
      [['forget', '--org', '1', '--email', 'a@b.co'], /unknown privacy command "forget"/],
      [['erase', '--org', '987654321', '--email', 'a@b.co'], /no organisation has the id 987654321/],
      [['erase', '--org', String((await newMerchant(srv, account)).organisation.id), '--email', 'not an email'], /the subject email/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args);
      expect(r.code, `${args.join(' ')}: ${r.err}`).to.equal(2);
      expect(r.err, args.join(' ')).to.match(message);
    }
  });
});
