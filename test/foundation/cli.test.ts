// The CLI and the embedded database as a person uses them: child processes,
// a data dir of their own, kill -9, restart.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runningPostmaster } from '../../src/db/embedded.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

describe('CLI and embedded PostgreSQL (child processes)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let port: number;
  let env: NodeJS.ProcessEnv;
  let server: ChildProcess | undefined;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-cli-'));
    port = await freePort();
    env = {
      ...process.env,
      TRACKWAY_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // merchants register themselves through the analytics host (the set-password test)
      REGISTRATION_TOKEN: 'cli_reg_token_8sJ2kQ9wLx',
    };
    delete env.DATABASE_URL; // this suite is about the embedded database
  });

  after(async () => {
    if (server && server.exitCode === null) server.kill('SIGKILL');
    const pid = runningPostmaster(path.join(dataDir, 'pg'));
    if (pid) {
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 100 && runningPostmaster(path.join(dataDir, 'pg')); i++) await new Promise((r) => setTimeout(r, 100));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'scripts/trackway.js'), ...args], { env, cwd: ROOT });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (code) => resolve({ code, out, err }));
    });
  }

  async function startServer(): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], { env, cwd: ROOT, stdio: 'ignore' });
    for (let i = 0; i < 900; i++) {
      if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}`);
      try {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        if (r.status === 200) return child;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('serve did not become ready');
  }

  async function login(email: string): Promise<number> {
    const r = await fetch(`http://127.0.0.1:${port}/v1/rest/acme/users/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    });
    return r.status;
  }

  it('prints help and refuses unknown commands and bad configuration with a one-line reason', async () => {
    const help = await cli('--help');
    expect(help.code).to.equal(0);
    // a bare `trackway` prints the help and exits: it does not start a second server
    const bare = await cli();
    expect(bare.code).to.equal(0);
    expect(bare.out).to.equal(help.out);
    expect(runningPostmaster(path.join(dataDir, 'pg'))).to.equal(undefined);
    expect(help.out).to.include('platform create --platform NAME');
    expect(help.out).to.include('platform set-password --email EMAIL --password PASSWORD');
    const bad = await cli('fly');
    expect(bad.code).to.equal(2);
    expect(bad.err).to.match(/^trackway: unknown command "fly"/);
    const saved = env.PORT;
    env.PORT = 'eighty';
    const conf = await cli('migrate');
    env.PORT = saved;
    expect(conf.code).to.equal(2);
    expect(conf.err.trim()).to.equal('trackway: PORT: "eighty" is not a whole number');
  });

  it('creates a platform account with the server stopped (and leaves no database running)', async () => {
    const r = await cli('platform', 'create', '--platform', 'acme', '--email', 'first@acme.example', '--password', 'correct horse battery');
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.match(/^created platform account first@acme\.example on platform "acme"/);
    // the slow first start (initdb) is said on stderr while it happens
    expect(r.err).to.match(/^trackway: initialising the embedded PostgreSQL in .+ \(the first run only; it takes about 20 s\)\n/);
    expect(r.err).to.match(/\ntrackway: starting the embedded PostgreSQL on 127\.0\.0\.1:\d+\n/);
    expect(runningPostmaster(path.join(dataDir, 'pg'))).to.equal(undefined);
    const again = await cli('platform', 'create', '--platform', 'acme', '--email', 'first@acme.example', '--password', 'correct horse battery');
    expect(again.code, again.err).to.equal(0);
    expect(again.err, 'nothing to say once initialised').to.equal('');
    expect(again.out).to.match(/already exists on platform "acme" \(user id \d+\); nothing changed/);
    // another password: said clearly, nothing changed, non-zero
    const other = await cli('platform', 'create', '--platform', 'acme', '--email', 'first@acme.example', '--password', 'another password 2026');
    expect(other.code).to.equal(2);
    expect(other.err).to.match(
      /^trackway: platform account first@acme\.example already exists on platform "acme" \(user id \d+\) with another password; nothing changed/,
    );
    expect(other.err).to.include('trackway platform set-password');
    const badName = await cli('platform', 'create', '--platform', 'integration', '--email', 'x@acme.example', '--password', 'correct horse battery');
    expect(badName.code).to.equal(2);
    const reserved = await cli('platform', 'create', '--platform', 'merchant', '--email', 'x@acme.example', '--password', 'correct horse battery');
    expect(reserved.code).to.equal(2);
    expect(reserved.err).to.include('reserved');
  });

  it('serves on the same data, and the CLI uses the running instance', async () => {
    server = await startServer();
    const pgPid = runningPostmaster(path.join(dataDir, 'pg'));
    expect(pgPid).to.be.a('number');
    const r = await cli('platform', 'create', '--platform', 'acme', '--email', 'second@acme.example', '--password', 'correct horse battery');
    expect(r.code, r.err).to.equal(0);
    expect(runningPostmaster(path.join(dataDir, 'pg'))).to.equal(pgPid); // not restarted, not stopped
    expect(await login('first@acme.example')).to.equal(200);
    expect(await login('second@acme.example')).to.equal(200);
  });

  it('sets a password while serve runs (platform set-password): earlier tokens stop working, the new password logs in; usage errors exit 2', async () => {
    const made = await cli('platform', 'create', '--platform', 'acme', '--email', 'third@acme.example', '--password', 'correct horse battery');
    expect(made.code, made.err).to.equal(0);
    const before = await fetch(`http://127.0.0.1:${port}/v1/rest/acme/users/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'third@acme.example', password: 'correct horse battery' }),
    });
    const token = ((await before.json()) as { bearer_token: string }).bearer_token;
    const read = () => fetch(`http://127.0.0.1:${port}/v1/rest/acme/organisations`, { headers: { authorization: `Bearer ${token}` } });
    expect((await read()).status).to.equal(200);

    const r = await cli('platform', 'set-password', '--email', 'third@acme.example', '--password', 'a new passphrase 2026');
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.match(
      /^set the password of platform account third@acme\.example on platform "acme" \(user id \d+\); its bearer tokens issued before now no longer work\n$/,
    );
    expect((await read()).status).to.equal(401);
    const login = (password: string) =>
      fetch(`http://127.0.0.1:${port}/v1/rest/acme/users/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'third@acme.example', password }),
      }).then((x) => x.status);
    expect(await login('correct horse battery')).to.equal(401);
    expect(await login('a new passphrase 2026')).to.equal(200);

    for (const args of [
      ['platform', 'set-password', '--email', 'third@acme.example'],
      ['platform', 'set-password', '--password', 'x'.repeat(12)],
      ['platform', 'set-password', '--email', 'a@b.co', '--password', 'p'.repeat(9), '--name', 'x'],
    ]) {
      const bad = await cli(...args);
      expect(bad.code, args.join(' ')).to.equal(2);
      expect(bad.err).to.match(/^trackway: /);
    }
    const unknown = await cli('platform', 'set-password', '--email', 'nobody@acme.example', '--password', 'long enough 123');
    expect(unknown.code).to.equal(2);
    expect(unknown.err.trim()).to.equal('trackway: no platform account or merchant has the email nobody@acme.example');
    const short = await cli('platform', 'set-password', '--email', 'third@acme.example', '--password', 'short');
    expect(short.code).to.equal(2);
    expect(await login('a new passphrase 2026')).to.equal(200); // unchanged
  });

  it('sets a self-registered merchant’s password too (issue 22, point 4), and says why a platform-registered one has none', async () => {
    const base = `http://127.0.0.1:${port}`;
    const post = (p: string, body: unknown, token?: string) =>
      fetch(base + p, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
    const reg = await post('/api/v1/register?token=cli_reg_token_8sJ2kQ9wLx', {
      email: 'owner@cli-bakery.example',
      password: 'r1se&shine-2024',
      first_name: 'Maria',
      domain: 'cli-bakery.example',
      entity: 'Bakery',
    });
    expect(reg.status).to.equal(200);
    const login = (password: string) => post('/v1/rest/merchant/users/login', { email: 'owner@cli-bakery.example', password });
    const session = ((await (await login('r1se&shine-2024')).json()) as { bearer_token: string }).bearer_token;
    const read = () => fetch(`${base}/v1/rest/merchant/organisations`, { headers: { authorization: `Bearer ${session}` } });
    expect((await read()).status).to.equal(200);

    const r = await cli('platform', 'set-password', '--email', 'owner@cli-bakery.example', '--password', 'a new passphrase 2026');
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.match(
      /^set the password of merchant owner@cli-bakery\.example \(signs in under "merchant", user id \d+\); its bearer tokens issued before now no longer work\n$/,
    );
    expect((await read()).status, 'the stolen session ends').to.equal(401);
    expect((await login('r1se&shine-2024')).status).to.equal(401);
    expect((await login('a new passphrase 2026')).status).to.equal(200);

    // a merchant registered by a platform has no password: its platform manages it
    const made = await cli('platform', 'create', '--platform', 'acme', '--email', 'fourth@acme.example', '--password', 'correct horse battery');
    expect(made.code, made.err).to.equal(0);
    const platformLogin = await post('/v1/rest/acme/users/login', { email: 'fourth@acme.example', password: 'correct horse battery' });
    const platformToken = ((await platformLogin.json()) as { bearer_token: string }).bearer_token;
    const merchant = await post('/v1/rest/acme/users/register', { email: 'jane@cli-linen.example', domain: 'cli-linen.example' }, platformToken);
    expect(merchant.status).to.equal(201);
    const refused = await cli('platform', 'set-password', '--email', 'jane@cli-linen.example', '--password', 'long enough 123');
    expect(refused.code).to.equal(2);
    expect(refused.err.trim()).to.equal(
      'trackway: jane@cli-linen.example is a merchant registered by a platform: it has no password and is managed by its platform',
    );
  });

  it('prints an organisation token (stored encrypted) with organisation token --domain', async () => {
    const tokenOf = async (email: string) => {
      const r = await fetch(`http://127.0.0.1:${port}/v1/rest/acme/users/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'correct horse battery' }),
      });
      return ((await r.json()) as { bearer_token: string }).bearer_token;
    };
    const reg = await fetch(`http://127.0.0.1:${port}/v1/rest/acme/users/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokenOf('first@acme.example')}` },
      body: JSON.stringify({ email: 'owner@cli-shop.example', domain: 'cli-shop.example' }),
    });
    expect(reg.status).to.equal(201);
    const org = ((await reg.json()) as { organisation: { token: string } }).organisation;
    const r = await cli('organisation', 'token', '--domain', 'https://www.CLI-shop.example/');
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.equal(`${org.token}\n`);
    const none = await cli('organisation', 'token', '--domain', 'no-such-shop.example');
    expect(none.code).to.equal(2);
    expect((await cli('organisation', 'token')).code).to.equal(2);
  });

  it('comes back after kill -9 with the data intact', async () => {
    server!.kill('SIGKILL');
    await new Promise((r) => server!.once('exit', r));
    server = await startServer();
    expect(await login('first@acme.example')).to.equal(200);
    expect(await login('second@acme.example')).to.equal(200);
  });

  it('shuts down cleanly on SIGTERM, stopping the embedded database', async () => {
    server!.kill('SIGTERM');
    const code = await new Promise((r) => server!.once('exit', (c) => r(c)));
    expect(code).to.equal(0);
    expect(runningPostmaster(path.join(dataDir, 'pg'))).to.equal(undefined);
    const m = await cli('migrate');
    expect(m.code, m.err).to.equal(0);
    expect(m.out).to.equal('migrations are up to date\n');
  });

  it('refuses migrate --distribute in one line when the database has no Citus', async () => {
    const r = await cli('migrate', '--distribute');
    expect(r.code).to.equal(2);
    expect(r.err).to.equal('trackway: the citus extension is not installed in this database (CREATE EXTENSION citus on every node first)\n');
    expect(runningPostmaster(path.join(dataDir, 'pg'))).to.equal(undefined);
  });

  it('runs the embedded PostgreSQL on TRACKWAY_PG_PORT, and says so in one line when that port is taken', async () => {
    const pinnedDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-cli-pg-'));
    const saved = { ...env };
    try {
      const pgPort = await freePort();
      Object.assign(env, { TRACKWAY_DATA_DIR: pinnedDir, TRACKWAY_PG_PORT: String(pgPort) });
      const m = await cli('migrate');
      expect(m.code, m.err).to.equal(0);
      expect(m.err).to.include(`trackway: starting the embedded PostgreSQL on 127.0.0.1:${pgPort}\n`);
      expect(JSON.parse(fs.readFileSync(path.join(pinnedDir, 'postgres.json'), 'utf8')).port).to.equal(pgPort);
      // someone else holds the port: no silent move to another one
      const holder = net.createServer();
      await new Promise<void>((resolve) => holder.listen(pgPort, '127.0.0.1', resolve));
      try {
        const taken = await cli('migrate');
        expect(taken.code).to.equal(2);
        expect(taken.err).to.equal(
          `trackway: TRACKWAY_PG_PORT: port ${pgPort} on 127.0.0.1 is in use; free it, or unset TRACKWAY_PG_PORT for a free port\n`,
        );
      } finally {
        await new Promise((resolve) => holder.close(resolve));
      }
    } finally {
      for (const key of Object.keys(env)) delete env[key];
      Object.assign(env, saved);
      fs.rmSync(pinnedDir, { recursive: true, force: true });
    }
  });
});
