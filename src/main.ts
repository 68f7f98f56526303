// The `trackway` CLI: serve (default), dispatch, migrate, platform create,
// platform set-password, organisation token, privacy erase|export.
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { defaultWorkers, MAX_WORKERS } from './cluster/pool-size.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { locateDatabase } from './db/connect.ts';
import { createDb, migrate } from './db/database.ts';
import { CitusAbsent, distribute } from './db/distribution.ts';
import { EmbeddedError } from './db/embedded.ts';
import { asOrgId } from './db/tenancy.ts';
import { GeoIpError } from './geo/geo.service.ts';
import { createLogger, type Logger } from './log.ts';
import { AccountError, ensurePlatformAccount, setPlatformPassword } from './platform/accounts.service.ts';
import { readOrganisationToken } from './platform/organisations.service.ts';
import { sealSecretsAtRest } from './platform/sealing.service.ts';
import { type Cipher, SecretKeyMismatch, existingCipher } from './platform/secrets.service.ts';
import { PrivacyCommandError } from './privacy/command-error.cli.ts';

const HELP = `Usage: trackway <command> [options]   (npm start runs \`trackway serve\`)

Commands:
  serve [--no-dispatcher] [--workers N]
                              run the API, tracker, docs and dashboard,
                              and the webhook dispatcher unless --no-dispatcher,
                              in N worker processes (default: one per core, at most 8)
  dispatch                    run only the webhook dispatcher (scale it separately)
  migrate [--distribute]      apply database migrations and exit; with --distribute
                              (Citus), also make the reference tables and distribute
                              the tenant tables by organisation (idempotent)
  platform create --platform NAME --email EMAIL --password PASSWORD [--name NAME]
                              create a platform account; if the email exists, nothing
                              changes (and a different password is an error)
  platform set-password --email EMAIL --password PASSWORD
                              set the password of a platform account or of a
                              self-registered merchant; its bearer tokens
                              issued before stop working
  organisation token --domain DOMAIN
                              print an organisation's token (it is stored encrypted)
  privacy erase|export --org ID (--email EMAIL | --phone PHONE | --core-id CORE_ID) [--suppress]
                              erase (or export) everything stored about a person of
                              the organisation and wait until it is done; prints the
                              counts (export: the JSON document on stdout, the counts
                              on stderr); --suppress also stops tracking the subject
  help, --help                show this help

Configuration comes from the environment; see the README. With no DATABASE_URL,
an embedded PostgreSQL runs in TRACKWAY_DATA_DIR (default ./.trackway); CLI
commands use the server's running instance when there is one.
`;

class UsageError extends Error {}

/**
 * Runs fn against the migrated database, then releases it. Secrets still in
 * clear are sealed first when the secret key is at hand (TRACKWAY_SECRET_KEY
 * or the data dir's); the CLI never makes a key of its own.
 */
async function withDatabase<T>(
  config: Config,
  log: Logger,
  fn: (db: ReturnType<typeof createDb>, applied: string[], cipher: Cipher | undefined) => Promise<T>,
): Promise<T> {
  const location = await locateDatabase(config, log, 'cli');
  const handle = createDb(location.url, { max: 2 });
  try {
    const applied = await migrate(handle.db);
    const cipher = existingCipher(config.secretKey, config.dataDir);
    if (cipher) await sealSecretsAtRest(handle.db, cipher, log);
    return await fn(handle, applied, cipher);
  } finally {
    await handle.close();
    await location.release();
  }
}

async function runServe(config: Config, log: Logger, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { 'no-dispatcher': { type: 'boolean' }, workers: { type: 'string' } }, strict: true });
  const opts = { dispatcher: !values['no-dispatcher'] };
  const raw = values.workers;
  const workers = raw === undefined ? defaultWorkers() : /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(workers >= 1 && workers <= MAX_WORKERS)) throw new UsageError(`--workers: "${raw}" is not a whole number from 1 to ${MAX_WORKERS}`);
  // the server's modules are loaded only where they run: a cluster's primary stays small
  if (cluster.isWorker) return (await import('./cluster/worker.ts')).runWorker(config, log, opts);
  if (workers > 1) return (await import('./cluster/primary.ts')).runPrimary(config, log, opts, workers);
  const { serve } = await import('./server.ts');
  untilSignal(log, await serve(config, log, opts));
}

async function runMigrate(config: Config, log: Logger, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { distribute: { type: 'boolean' } }, strict: true });
  const { applied, distributed } = await withDatabase(config, log, async (h, names) => ({
    applied: names,
    distributed: values.distribute ? await distribute(h.db) : [],
  }));
  process.stdout.write(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'migrations are up to date\n');
  if (values.distribute) {
    process.stdout.write(distributed.length ? `${distributed.join('\n')}\n` : 'every table is already distributed\n');
  }
}

async function runDispatch(config: Config, log: Logger, args: string[]): Promise<void> {
  parseArgs({ args, options: {}, strict: true });
  const { dispatch } = await import('./server.ts');
  untilSignal(log, await dispatch(config, log));
}

/** Runs until SIGINT/SIGTERM, then stops gracefully (a second signal exits at once). */
function untilSignal(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    stop().then(
      () => {
        log.flush?.();
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

async function runPlatform(config: Config, log: Logger, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'set-password') return runSetPassword(config, log, rest);
  if (sub !== 'create') throw new UsageError(`unknown platform command "${sub ?? ''}" (expected: create, set-password)`);
  const { values } = parseArgs({
    args: rest,
    options: {
      platform: { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      name: { type: 'string' },
    },
    strict: true,
  });
  if (!values.platform || !values.email || !values.password) {
    throw new UsageError('platform create needs --platform, --email and --password');
  }
  const result = await withDatabase(config, log, (h) =>
    ensurePlatformAccount(
      { db: h.db, config },
      {
        platform: values.platform!,
        email: values.email!,
        password: values.password!,
        name: values.name ?? '',
      },
      { checkPassword: true },
    ),
  );
  if (result.created) {
    process.stdout.write(`created platform account ${values.email} on platform "${values.platform}" (user id ${result.userId})\n`);
  } else if (result.samePassword) {
    process.stdout.write(
      `platform account ${values.email} already exists on platform "${values.platform}" (user id ${result.userId}); nothing changed\n`,
    );
  } else {
    throw new AccountError(
      `platform account ${values.email} already exists on platform "${values.platform}" (user id ${result.userId}) with another password; ` +
        'nothing changed (to change its password: trackway platform set-password)',
    );
  }
}

async function runSetPassword(config: Config, log: Logger, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { email: { type: 'string' }, password: { type: 'string' } }, strict: true });
  if (!values.email || !values.password) throw new UsageError('platform set-password needs --email and --password');
  const result = await withDatabase(config, log, (h) =>
    setPlatformPassword({ db: h.db, config }, { email: values.email!, password: values.password! }),
  );
  const who = result.merchant
    ? `merchant ${values.email} (signs in under "${result.platform}", user id ${result.userId})`
    : `platform account ${values.email} on platform "${result.platform}" (user id ${result.userId})`;
  process.stdout.write(`set the password of ${who}; its bearer tokens issued before now no longer work\n`);
}

async function runOrganisation(config: Config, log: Logger, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'token') throw new UsageError(`unknown organisation command "${sub ?? ''}" (expected: token)`);
  const { values } = parseArgs({ args: rest, options: { domain: { type: 'string' } }, strict: true });
  if (!values.domain) throw new UsageError('organisation token needs --domain');
  const found = await withDatabase(config, log, (h, _applied, cipher) => {
    if (!cipher) throw new AccountError(`no secret key: set TRACKWAY_SECRET_KEY, or run this in the server's data dir (${config.dataDir})`);
    return readOrganisationToken({ db: h.db, cipher }, values.domain!);
  });
  if (!found) throw new AccountError(`no organisation has the domain ${values.domain}`);
  process.stdout.write(`${found.token}\n`);
}

async function runPrivacy(config: Config, log: Logger, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'erase' && sub !== 'export') throw new UsageError(`unknown privacy command "${sub ?? ''}" (expected: erase, export)`);
  const { values } = parseArgs({
    args: rest,
    options: {
      org: { type: 'string' },
      email: { type: 'string' },
      phone: { type: 'string' },
      'core-id': { type: 'string' },
      suppress: { type: 'boolean' },
    },
    strict: true,
  });
  const orgId = values.org !== undefined && /^[1-9]\d{0,15}$/.test(values.org) ? Number(values.org) : NaN;
  if (!Number.isSafeInteger(orgId)) throw new UsageError(`privacy ${sub} needs --org with an organisation id`);
  const given = (['email', 'phone', 'core-id'] as const).filter((k) => values[k] !== undefined);
  if (given.length !== 1) throw new UsageError(`privacy ${sub} needs exactly one of --email, --phone, --core-id`);
  const subject =
    values.email !== undefined ? { email: values.email } : values.phone !== undefined ? { phone: values.phone } : { core_id: values['core-id']! };
  // loaded only for this command: the CLI's entry stays small (a cluster's primary loads it too)
  const { countsLine, runPrivacyCommand } = await import('./privacy/privacy.cli.ts');
  const done = await withDatabase(config, log, (h, _applied, cipher) => {
    if (!cipher) throw new AccountError(`no secret key: set TRACKWAY_SECRET_KEY, or run this in the server's data dir (${config.dataDir})`);
    return runPrivacyCommand({ db: h.db, cipher, log }, { type: sub, orgId: asOrgId(orgId), subject, suppress: values.suppress === true });
  });
  const line = `${sub === 'erase' ? 'erased' : 'exported'}: ${countsLine(done.counts)} (privacy request ${done.id} of organisation ${orgId})\n`;
  if (sub === 'export') {
    process.stdout.write(`${JSON.stringify(done.result, null, 2)}\n`);
    process.stderr.write(line);
  } else process.stdout.write(line);
}

async function main(argv: string[]): Promise<void> {
  // no command prints the help: a bare `npx trackway` must not start a second server (`npm start` says `serve`)
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h' || args.includes('--help')) {
    process.stdout.write(HELP);
    return;
  }
  const config = loadConfig();
  const log = createLogger(command === 'serve' || command === 'dispatch' ? config.logLevel : 'warn');
  switch (command) {
    case 'serve':
      return runServe(config, log, args);
    case 'dispatch':
      return runDispatch(config, log, args);
    case 'migrate':
      return runMigrate(config, log, args);
    case 'platform':
      return runPlatform(config, log, args);
    case 'organisation':
      return runOrganisation(config, log, args);
    case 'privacy':
      return runPrivacy(config, log, args);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`trackway: ${(err as Error).message}\n\n${HELP}`);
    process.exit(2);
  }
  if (
    err instanceof ConfigError ||
    err instanceof AccountError ||
    err instanceof EmbeddedError ||
    err instanceof GeoIpError ||
    err instanceof SecretKeyMismatch ||
    err instanceof CitusAbsent ||
    err instanceof PrivacyCommandError
  ) {
    process.stderr.write(`trackway: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`trackway: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
