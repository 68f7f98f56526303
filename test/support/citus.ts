// The test run on a Citus cluster (docs/scaling.md, "The recorded run"):
// DATABASE_URL names the coordinator and TEST_CITUS_WORKERS its workers
// (`host:port,host:port`, same user, trust or .pgpass). A database made on
// the coordinator does not exist on the workers, so each database of the run
// (the template and every clone) is made on every node; the template gets the
// citus extension, its workers, the migrations and `migrate --distribute`,
// and a clone of it on every node carries the same shards and metadata.
// Without TEST_CITUS_WORKERS none of this runs.
import pg from 'pg';

export interface CitusNodes {
  /** admin URLs (database `postgres`) of the workers */
  workers: { host: string; port: number; adminUrl: string }[];
}

/** Whether this run is on a Citus cluster (TEST_CITUS_WORKERS set): the tests that check plans and waits read the cluster's own views then. */
export function onCitusCluster(): boolean {
  return Boolean(process.env.TEST_CITUS_WORKERS);
}

export function citusFromEnv(adminUrl: string): CitusNodes | undefined {
  const raw = process.env.TEST_CITUS_WORKERS;
  if (!raw) return undefined;
  return {
    workers: raw.split(',').map((hp) => {
      const [host, port] = hp.trim().split(':');
      const u = new URL(adminUrl);
      u.hostname = host!;
      u.port = port!;
      return { host: host!, port: Number(port), adminUrl: u.toString() };
    }),
  };
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function run(url: string, ...statements: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const s of statements) await c.query(s);
  } finally {
    await c.end();
  }
}

/** The template on every node, with citus, and the workers added on the coordinator (before migrating). */
export async function createCitusTemplate(nodes: CitusNodes, coordinatorAdminUrl: string, template: string): Promise<void> {
  for (const w of nodes.workers) {
    await run(w.adminUrl, `CREATE DATABASE ${template}`);
    await run(withDatabase(w.adminUrl, template), 'CREATE EXTENSION citus');
  }
  const coordinator = new URL(coordinatorAdminUrl);
  await run(
    withDatabase(coordinatorAdminUrl, template),
    'CREATE EXTENSION citus',
    `SELECT citus_set_coordinator_host('${coordinator.hostname}', ${Number(coordinator.port || 5432)})`,
    ...nodes.workers.map((w) => `SELECT citus_add_node('${w.host}', ${w.port})`),
  );
}

/**
 * A clone of the template on every node (workers first). Citus's maintenance
 * daemon keeps a connection to each database with the extension: those of the
 * template are ended first (they come back by themselves), or the copy is refused.
 */
export async function cloneCitusDatabase(nodes: CitusNodes, coordinatorAdminUrl: string, template: string, name: string): Promise<void> {
  for (const url of [...nodes.workers.map((w) => w.adminUrl), coordinatorAdminUrl]) {
    for (let attempt = 1; ; attempt++) {
      try {
        await run(
          url,
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${template}' AND pid <> pg_backend_pid()`,
          `CREATE DATABASE ${name} TEMPLATE ${template}`,
        );
        break;
      } catch (err) {
        if (attempt >= 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** Drops the run's databases (by prefix) on every worker. */
export async function dropOnWorkers(nodes: CitusNodes, names: string[]): Promise<void> {
  for (const w of nodes.workers) {
    for (const name of names) await run(w.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  }
}
