// An SDK generated from the served document works: @hey-api/openapi-ts
// (0.95, the last line that runs on Node 20) generates a TypeScript fetch
// client from /openapi.json of a running server into a temporary directory;
// tsc type-checks it together with a small flow written against it (strict,
// no casts); then the flow runs against that server with the client's
// default base URL (the served document's first server): log in, register a
// merchant, create and update an integration on both path forms, identify a
// visitor, record an event, submit a learning event.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient } from '@hey-api/openapi-ts';
import { expect } from 'chai';
import { projectPath } from '../../src/project.ts';
import { PASSWORD, newAccount, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';

/** The flow, written as an integrator would: only the generated SDK, fully typed. */
const FLOW = `import { client } from './client/client.gen.ts';
import {
  createIntegration,
  createIntegrationUnscoped,
  identifyVisitor,
  loginPlatformUser,
  recordProductViewEvent,
  registerClientUser,
  submitLearningEvent,
  updateIntegration,
  updateIntegrationUnscoped,
} from './client/index.ts';

export interface FlowInput {
  platform: string;
  email: string;
  password: string;
  merchant: string;
}

export async function flow(input: FlowInput) {
  const platform_name = input.platform;
  const login = await loginPlatformUser({ path: { platform_name }, body: { email: input.email, password: input.password }, throwOnError: true });
  client.setConfig({ auth: login.data.bearer_token });

  const registered = await registerClientUser({
    path: { platform_name },
    body: { email: input.merchant + '@merchant.example', domain: input.merchant + '.shop.example', name: 'Jane Doe', organisation_name: 'Jane Linen' },
    throwOnError: true,
  });
  const org_id = registered.data.organisation.id;
  const data = { endpoint: 'https://hooks.example.com/trackway', httpTimeout: '10', do_events: true, do_contacts: true };

  const scoped = await createIntegration({ path: { platform_name }, body: { org_id, active: true, type: 'WEBHOOK', data }, throwOnError: true });
  const scopedUpdate = await updateIntegration({
    path: { platform_name },
    body: { id: scoped.data.integration.id, org_id, active: false, type: 'WEBHOOK', data },
    throwOnError: true,
  });
  const unscoped = await createIntegrationUnscoped({ body: { org_id, active: true, type: 'WEBHOOK', data }, throwOnError: true });
  const unscopedUpdate = await updateIntegrationUnscoped({
    body: { id: unscoped.data.integration.id, org_id, active: false, type: 'WEBHOOK', data: { ...data, do_events: false } },
    throwOnError: true,
  });

  const core_id = 'core-' + input.merchant;
  const payload = Buffer.from(JSON.stringify({ email: 'jane.doe@example.com', name: 'Jane Doe' })).toString('base64url');
  const identified = await identifyVisitor({ path: { org_id, roaming_id: 'roam-1', core_id, payload }, throwOnError: true });
  const event = await recordProductViewEvent({
    path: { org_id, roaming_id: 'roam-1', core_id, corex_id: 'null' },
    body: { product_id: 7312458963, price: 59.9, product_url: 'https://' + input.merchant + '.shop.example/products/linen-shirt' },
    throwOnError: true,
  });
  const learned = await submitLearningEvent({
    body: { org_token: registered.data.organisation.token, eventName: 'newsletter_signup', eventVal: { plan: 'weekly' } },
    throwOnError: true,
  });

  // an error answer is typed too: the platform's {code, message}
  const refused = await registerClientUser({ path: { platform_name }, body: { email: input.merchant + '@merchant.example', domain: 'other-' + input.merchant + '.example' } });
  const refusedCode: number | undefined = refused.error?.code;

  return {
    token: login.data.bearer_token,
    org_id,
    integrations: [scoped.data.integration, scopedUpdate.data.integration, unscoped.data.integration, unscopedUpdate.data.integration],
    core_id: identified.data.core_id,
    event: event.data.status,
    learned: learned.data.status,
    refused: { status: refused.response.status, code: refusedCode },
  };
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    allowImportingTsExtensions: true,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    lib: ['ES2022', 'DOM'],
    types: ['node'],
    typeRoots: [projectPath('node_modules', '@types')],
  },
  include: ['flow.ts', 'client/**/*.ts'],
};

describe('a TypeScript SDK generated from the served document (@hey-api/openapi-ts)', function () {
  this.timeout(180_000);
  let srv: TestServer;
  let dir: string;
  before(async () => {
    srv = await startTestServer();
    dir = mkdtempSync(path.join(os.tmpdir(), 'trackway-sdk-'));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('generates, type-checks and runs the integrator flow against the server', async () => {
    const served = await fetch(`${srv.url}/openapi.json`);
    expect(served.status).to.equal(200);
    const input = path.join(dir, 'openapi.json');
    writeFileSync(input, await served.text());

    await createClient({
      input,
      output: path.join(dir, 'client'),
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
      logs: { level: 'silent' },
    });
    writeFileSync(path.join(dir, 'flow.ts'), FLOW);
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));

    const tsc = spawnSync(process.execPath, [projectPath('node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(dir, 'tsconfig.json')], {
      encoding: 'utf8',
    });
    expect(tsc.status, `tsc on the generated client and the flow:\n${tsc.stdout}${tsc.stderr}`).to.equal(0);

    // the client's default base URL is the served document's first server: this one
    // (checked before anything runs: the flow must never reach the public addresses)
    expect(readFileSync(path.join(dir, 'client', 'client.gen.ts'), 'utf8')).to.include(`baseUrl: '${srv.url}'`);
    const { flow } = (await import(pathToFileURL(path.join(dir, 'flow.ts')).href)) as {
      flow: (i: { platform: string; email: string; password: string; merchant: string }) => Promise<Record<string, any>>;
    };
    const account = await newAccount(srv);
    const merchant = unique('sdk');
    const out = await flow({ platform: account.platform, email: account.email, password: PASSWORD, merchant });

    expect(out.token).to.be.a('string').that.is.not.empty;
    expect(out.integrations.map((i: { active: boolean; org_id: number }) => [i.org_id, i.active])).to.deep.equal([
      [out.org_id, true],
      [out.org_id, false],
      [out.org_id, true],
      [out.org_id, false],
    ]);
    expect(out.integrations[1].id).to.equal(out.integrations[0].id);
    expect(out.integrations[3].id).to.equal(out.integrations[2].id);
    expect(out.integrations[3].data.do_events).to.equal(false);
    expect(out.core_id).to.equal(`core-${merchant}`);
    expect(out.event).to.equal('accepted');
    expect(out.learned).to.equal('success');
    expect(out.refused).to.deep.equal({ status: 409, code: 4009 });

    // what the flow did is really stored
    const events = await srv.deps.db.selectFrom('events').select(['name']).where('org_id', '=', out.org_id).execute();
    expect(events.map((e) => e.name)).to.deep.equal(['productview']);
    const learned = await srv.deps.db.selectFrom('learn_events').select(['event_name']).where('org_id', '=', out.org_id).execute();
    expect(learned.map((e) => e.event_name)).to.deep.equal(['newsletter_signup']);
  });
});
