// `trackway/client` as an integrator gets it: the package is packed (npm pack,
// with package.json's `exports` and `files`) around a client built by
// scripts/build-client.ts, unpacked into a consumer's node_modules, and a
// consumer module imports `trackway/client` by name: tsc type-checks it
// against the packed declarations (strict, NodeNext, no lib check skipped for
// ours), and node runs it against a real server.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { buildClient } from '../../scripts/build-client.ts';
import { projectPath } from '../../src/project.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';

const CONSUMER = `import { createTrackwayClient, encodeIdentifyPayload, isTestDelivery, verifyWebhook, type WebhookNotification } from 'trackway/client';

const input = JSON.parse(process.argv[2] ?? '{}') as { baseUrl: string; secret: string; headers: Record<string, string>; body: string };
const tw = createTrackwayClient({ baseUrl: input.baseUrl });
const health = await tw.getHealth();
const status: 'ok' | undefined = health.data?.status;
const note: WebhookNotification = verifyWebhook(input.secret, input.headers, input.body);
let tampered = 'accepted';
try {
  verifyWebhook(input.secret, input.headers, input.body.replace('jane', 'john'));
} catch (e) {
  tampered = (e as { reason: string }).reason;
}
console.log(JSON.stringify({ status, medium: note.medium, test: isTestDelivery(input.headers, note), tampered, payload: encodeIdentifyPayload({ email: 'jane@example.com' }) }));
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    types: ['node'],
    typeRoots: [projectPath('node_modules', '@types')],
  },
  include: ['app.mts'],
};

function run(cmd: string, args: string[], cwd: string) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
  });
  expect(r.status, `${cmd} ${args.join(' ')}:\n${r.stdout}${r.stderr}`).to.equal(0);
  return r.stdout;
}

/** Like run, without blocking: the server the command calls runs in this process. */
function runAsync(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args[0]} exited with ${code}:\n${out}${err}`))));
  });
}

describe('the trackway/client package subpath, packed and imported by name', function () {
  this.timeout(180_000);
  let srv: TestServer;
  let dir: string;
  before(async () => {
    srv = await startTestServer();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-client-pack-'));
  });
  after(async () => {
    await srv?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('ships dist/client in the tarball, and a consumer type-checks and runs `import … from "trackway/client"`', async () => {
    // the package as `npm pack` sees it: this package.json, and a client built now
    const pkg = path.join(dir, 'pkg');
    fs.mkdirSync(pkg);
    fs.copyFileSync(projectPath('package.json'), path.join(pkg, 'package.json'));
    await buildClient(projectPath(), path.join(pkg, 'dist', 'client'));
    const packed = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], pkg)) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).to.include.members(['package.json', 'dist/client/index.js', 'dist/client/index.d.ts', 'dist/client/types/generated/openapi.d.ts']);

    // a consumer with the tarball unpacked as node_modules/trackway (openapi-fetch, its dependency, from here)
    const consumer = path.join(dir, 'consumer');
    const installed = path.join(consumer, 'node_modules', 'trackway');
    fs.mkdirSync(installed, { recursive: true });
    run('tar', ['-xzf', path.join(dir, packed[0]!.filename), '-C', installed, '--strip-components=1'], dir);
    fs.symlinkSync(projectPath('node_modules', 'openapi-fetch'), path.join(consumer, 'node_modules', 'openapi-fetch'), 'dir');
    fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    fs.writeFileSync(path.join(consumer, 'app.mts'), CONSUMER);
    fs.writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    run(process.execPath, [projectPath('node_modules', 'typescript', 'bin', 'tsc'), '-p', consumer], consumer);

    // run it (type annotations stripped by esbuild, as any consumer's build would)
    const { transformSync } = await import('esbuild');
    fs.writeFileSync(path.join(consumer, 'app.mjs'), transformSync(CONSUMER, { loader: 'ts', format: 'esm' }).code);
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const body = JSON.stringify({ medium: 'matched', contact: 'jane@example.com', type: 'EMAIL', date: '2026-11-26', org_id: '1', test: true });
    const id = 'msg_test_1';
    const at = new Date();
    const signature = new Webhook(secret).sign(id, at, body);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
    const out = await runAsync(process.execPath, ['app.mjs', JSON.stringify({ baseUrl: srv.url, secret, headers, body })], consumer);
    expect(JSON.parse(out)).to.deep.equal({
      status: 'ok',
      medium: 'matched',
      test: true,
      tampered: 'invalid_signature',
      payload: Buffer.from('{"email":"jane@example.com"}').toString('base64url'),
    });
  });
});
