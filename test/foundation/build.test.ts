// The production build (`npm run build`, run by `npm ci` and by `npm start`
// when stale) and the compiled server it makes: dist/src/ from tsc, the
// browser assets bundled at build time, migrations that keep their names, and
// a server that runs without esbuild or tsx.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { buildState, signatureOf, sourceEntries } from '../../scripts/build-state.js';
import { buildDashboard } from '../../src/dashboard/bundle.ts';
import { buildTracker, TRACKER_GZIP_LIMIT } from '../../src/tracking/tracker-bundle.service.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { freePort } from '../reliability/child.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIST = path.join(ROOT, 'dist');
const FORBID = path.join(ROOT, 'test/support/forbid-build-tools.mjs');

interface Run {
  code: number | null;
  out: string;
}

function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => fs.statSync(path.join(dir, f)).isFile());
}

describe('the production build (npm run build)', function () {
  this.timeout(180_000);

  it('compiles src/ to dist/src/ as JavaScript, with the migrations under their own names and nothing of the browser code', async () => {
    const r = await run(['--import', 'tsx', 'scripts/build.ts']);
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(/built dist\/ in [\d.]+ s \(tracker\.js \d+ bytes gzipped\)/);
    const compiled = filesUnder(path.join(DIST, 'src'));
    expect(compiled).to.include('main.js');
    expect(
      compiled.filter((f) => !f.endsWith('.js')),
      'only JavaScript in dist/src',
    ).to.deep.equal([]);
    expect(
      compiled.filter((f) => f.startsWith('dashboard/app/') || f.startsWith('tracking/tracker/')),
      'browser code is bundled, not compiled',
    ).to.deep.equal([]);
    // every import specifier was rewritten: no .ts left
    const main = fs.readFileSync(path.join(DIST, 'src', 'main.js'), 'utf8');
    expect(main)
      .to.match(/from ["']\.\/config\.js["']/)
      .and.match(/import\(["']\.\/server\.js["']\)/)
      .and.not.match(/\.tsx?["']/);
    // Kysely names a migration after its file without the extension: the same names from src/ and dist/
    const names = (dir: string, ext: string) =>
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(ext))
        .map((f) => f.slice(0, -ext.length))
        .sort();
    const fromSrc = names(path.join(ROOT, 'src/db/migrations'), '.ts');
    expect(fromSrc.length).to.be.greaterThan(0);
    expect(names(path.join(DIST, 'src/db/migrations'), '.js')).to.deep.equal(fromSrc);
    expect(fs.readdirSync(path.join(DIST, 'src/db/migrations')).filter((f) => !f.endsWith('.js'))).to.deep.equal([]);
    expect(buildState().fresh, 'the launchers see the new build as fresh').to.equal(true);
    // the official client (package.json exports "./client"): one ES module importing openapi-fetch, with declarations
    expect(fs.readFileSync(path.join(DIST, 'client', 'index.js'), 'utf8'))
      .to.match(/from ["']openapi-fetch["']/)
      .and.include('function createTrackwayClient');
    expect(fs.readFileSync(path.join(DIST, 'client', 'index.d.ts'), 'utf8')).to.include('./types/src/client/index.js');
    const self = 'trackway/client'; // the package's own name resolves through its exports
    const client = (await import(self)) as Record<string, unknown>;
    expect(Object.keys(client)).to.include.members([
      'createTrackwayClient',
      'encodeIdentifyPayload',
      'verifyWebhook',
      'isTestDelivery',
      'operations',
    ]);
  });

  it('bundles the tracker (at most 2 KB gzipped) and the dashboard into dist/assets/, as the in-memory build does', async () => {
    const assets = path.join(DIST, 'assets');
    const tracker = await buildTracker();
    const code = fs.readFileSync(path.join(assets, 'tracker.js'), 'utf8');
    const gz = fs.readFileSync(path.join(assets, 'tracker.js.gz'));
    expect(code).to.equal(tracker.code);
    expect(gunzipSync(gz).toString('utf8')).to.equal(code);
    expect(gz.length).to.be.at.most(TRACKER_GZIP_LIMIT);
    const manifest = JSON.parse(fs.readFileSync(path.join(assets, 'manifest.json'), 'utf8')) as {
      tracker: { etag: string };
      dashboard: { script: string; style: string };
    };
    expect(manifest.tracker.etag).to.equal(tracker.etag);
    const dashboard = await buildDashboard();
    expect([manifest.dashboard.script, manifest.dashboard.style]).to.deep.equal([dashboard.script, dashboard.style]);
    for (const f of dashboard.files) {
      expect(fs.readFileSync(path.join(assets, 'dashboard', f.name)).equals(f.body), f.name).to.equal(true);
      expect(gunzipSync(fs.readFileSync(path.join(assets, 'dashboard', `${f.name}.gz`))).equals(f.body)).to.equal(true);
    }
  });

  describe('the compiled server, on a database migrated by the tsx code', () => {
    let database: TestDatabase;
    let dataDir: string;
    let child: ChildProcess | undefined;

    before(async () => {
      database = await freshDatabase(); // cloned from the template the test run migrated through tsx
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-compiled-'));
    });
    after(async () => {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    function env(port = 0): NodeJS.ProcessEnv {
      return {
        ...process.env,
        DATABASE_URL: database.url,
        TRACKWAY_DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        GEOIP_DB: 'off',
        LOG_LEVEL: 'warn',
      };
    }

    it('finds nothing to migrate', async () => {
      const r = await run(['--import', FORBID, 'dist/src/main.js', 'migrate'], env());
      expect(r.code, r.out).to.equal(0);
      expect(r.out).to.equal('migrations are up to date\n');
    });

    it('serves the prebuilt tracker, dashboard and contract without loading esbuild or tsx', async () => {
      const port = await freePort();
      child = spawn(process.execPath, ['--import', FORBID, 'dist/src/main.js', 'serve', '--workers', '1'], {
        cwd: ROOT,
        env: env(port),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      for (let i = 0; !out.includes('Trackway is listening'); i++) {
        if (child.exitCode !== null || i > 600) throw new Error(`the compiled server did not start:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const base = `http://127.0.0.1:${port}`;
      const assets = path.join(DIST, 'assets');
      const tracker = await fetch(`${base}/jsv1/tracker.js`, { headers: { 'accept-encoding': 'identity' } });
      expect(tracker.status).to.equal(200);
      expect(await tracker.text()).to.equal(fs.readFileSync(path.join(assets, 'tracker.js'), 'utf8'));
      const manifest = JSON.parse(fs.readFileSync(path.join(assets, 'manifest.json'), 'utf8')) as {
        tracker: { etag: string };
        dashboard: { script: string };
      };
      expect(tracker.headers.get('etag')).to.equal(manifest.tracker.etag);
      const page = await (await fetch(`${base}/dashboard`)).text();
      expect(page).to.include(`/dashboard/assets/${manifest.dashboard.script}`);
      const script = await fetch(`${base}/dashboard/assets/${manifest.dashboard.script}`);
      expect(script.status).to.equal(200);
      expect(Buffer.from(await script.arrayBuffer()).equals(fs.readFileSync(path.join(assets, 'dashboard', manifest.dashboard.script)))).to.equal(
        true,
      );
      const contract = (await (await fetch(`${base}/openapi.json`)).json()) as { openapi: string };
      expect(contract.openapi).to.match(/^3\.1/);
      child.kill('SIGTERM');
      const code = await new Promise((r) => child!.once('exit', (c) => r(c)));
      expect(code, out).to.equal(0);
      expect(out).not.to.match(/imported in production/);
    });
  });

  it('npm start builds a missing or stale dist/ first, then runs it', async () => {
    // a stamp from other sources makes dist/ stale without touching a source file
    const stampFile = path.join(DIST, 'build.json');
    const stamp = JSON.parse(fs.readFileSync(stampFile, 'utf8')) as { signature: string };
    fs.writeFileSync(stampFile, JSON.stringify({ ...stamp, signature: 'stale' }));
    expect(buildState().fresh).to.equal(false);
    const r = await run(['scripts/start.js', '--help']);
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(/^trackway: building dist\/ first: /m);
    expect(r.out).to.match(/built dist\/ in/);
    expect(r.out).to.include('Usage: trackway');
    expect(buildState().fresh).to.equal(true);
    // fresh: no build, and `npx trackway` runs dist/ too (tsx cannot even load here)
    const again = await run(['--import', FORBID, 'scripts/start.js', '--help']);
    expect(again.out).not.to.match(/building/);
    expect(again.out).to.include('Usage: trackway');
    const bin = await run(['--import', FORBID, 'scripts/trackway.js', '--help']);
    expect(bin.code, bin.out).to.equal(0);
    expect(bin.out).to.include('Usage: trackway');
  });

  it('tells a fresh build from a stale one by every input file: edited, added, removed, or restored with an older mtime', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-stamp-'));
    try {
      fs.mkdirSync(path.join(root, 'src/db'), { recursive: true });
      fs.mkdirSync(path.join(root, 'generated'));
      fs.mkdirSync(path.join(root, 'dist/src'), { recursive: true });
      fs.writeFileSync(path.join(root, 'src/main.ts'), 'export {};\n');
      fs.writeFileSync(path.join(root, 'src/db/a.ts'), 'export {};\n');
      fs.writeFileSync(path.join(root, 'generated/openapi.json'), '{}\n');
      fs.writeFileSync(path.join(root, 'package.json'), '{}\n');
      fs.writeFileSync(path.join(root, 'dist/src/main.js'), '\n');
      const stamp = () => {
        const entries = sourceEntries(root);
        fs.writeFileSync(path.join(root, 'dist/build.json'), JSON.stringify({ signature: signatureOf(entries), entries }));
      };
      expect(buildState(root)).to.deep.equal({ fresh: false, reason: 'there is no build yet' });
      stamp();
      expect(buildState(root).fresh).to.equal(true);

      const old = new Date(Date.now() - 86_400_000);
      fs.utimesSync(path.join(root, 'src/db/a.ts'), old, old);
      expect(buildState(root)).to.deep.equal({ fresh: false, reason: 'src/db/a.ts changed since the last build' });
      stamp();
      fs.writeFileSync(path.join(root, 'src/new.ts'), 'export {};\n');
      expect(buildState(root)).to.deep.equal({ fresh: false, reason: 'src/new.ts changed since the last build' });
      stamp();
      fs.rmSync(path.join(root, 'src/db/a.ts'));
      expect(buildState(root)).to.deep.equal({ fresh: false, reason: 'src/db/a.ts changed since the last build' });
      stamp();
      fs.writeFileSync(path.join(root, 'package.json'), '{"version":"2"}\n');
      expect(buildState(root).reason).to.equal('package.json changed since the last build');
      stamp();
      fs.rmSync(path.join(root, 'dist/src/main.js'));
      expect(buildState(root)).to.deep.equal({ fresh: false, reason: 'dist/src/main.js is missing' });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
