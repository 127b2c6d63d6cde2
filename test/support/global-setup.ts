import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { PGlite } from '@electric-sql/pglite';
import { openPostgres } from '../../src/store/pg.ts';
import { wrapPglite } from '../../src/store/pglite.ts';
import { prepareDatabase } from '../../src/schema.ts';
import { startPostgresServer } from './postgres-server.ts';
import type { PostgresServer } from './postgres-server.ts';
import { enabledEngines } from './engines-config.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string;
    pgTemplateDb: string;
    pgliteTemplate: string;
  }
}

export const TEMPLATE_DB = 'agentyard_template';

interface Databases {
  provided: { pgliteTemplate: string; pgUrl: string; pgTemplateDb: string };
  stop(): Promise<void>;
}

/**
 * The `db` and `heavy` projects both name this setup, and vitest runs a project's global setup once per
 * project: the first call starts the databases, the second shares them (same process), and the last teardown
 * stops them.
 */
const shared = globalThis as typeof globalThis & {
  agentyardTestDatabases?: { ready: Promise<Databases>; users: number };
};

/**
 * Once per test run: a real PostgreSQL server with a migrated template database, and a migrated PGlite data
 * directory dumped to a file. Each test then gets its own database cloned from a template in milliseconds.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.agentyardTestDatabases ??= { ready: startDatabases(), users: 0 };
  const state = shared.agentyardTestDatabases;
  state.users++;
  const { provided, stop } = await state.ready;
  project.provide('pgliteTemplate', provided.pgliteTemplate);
  project.provide('pgUrl', provided.pgUrl);
  project.provide('pgTemplateDb', provided.pgTemplateDb);
  return async () => {
    if (--state.users > 0) return;
    shared.agentyardTestDatabases = undefined;
    await stop();
  };
}

async function startDatabases(): Promise<Databases> {
  const engines = enabledEngines();
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-test-'));
  let server: PostgresServer | undefined;

  const provided = { pgliteTemplate: path.join(dir, 'pglite-template.tar'), pgUrl: '', pgTemplateDb: '' };
  // PGlite migrates in this process while PostgreSQL's initdb runs in its own: the two overlap
  const pgliteReady = (async () => {
    // Every test database on PGlite is this dump unpacked into memory, in the test's process: 1 MB WAL segments
    // instead of 16 and no template databases (nothing creates a database on PGlite) make it 17 MB instead of
    // 43, so each one opens with less CPU and leaves a smaller process to fork for git and agents.
    const pglite = await PGlite.create({ initDbStartParams: ['--wal-segsize=1'] });
    await prepareDatabase(await wrapPglite(pglite));
    await pglite.exec("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')");
    await pglite.exec('DROP DATABASE template0');
    await pglite.exec('DROP DATABASE template1');
    await pglite.exec('CHECKPOINT');
    writeFileSync(provided.pgliteTemplate, Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer()));
    await pglite.close();
  })();
  const postgresReady = (async () => {
    if (!engines.includes('postgres')) return;
    server = await startPostgresServer();
    const admin = await openPostgres({ connectionString: server.url });
    await admin.exec(`CREATE DATABASE ${TEMPLATE_DB}`);
    await admin.close();
    const templateUrl = server.url.replace(/\/postgres$/, `/${TEMPLATE_DB}`);
    const db = await openPostgres({ connectionString: templateUrl });
    await prepareDatabase(db);
    await db.close();
    provided.pgUrl = server.url;
    provided.pgTemplateDb = TEMPLATE_DB;
  })();
  const results = await Promise.allSettled([pgliteReady, postgresReady]);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw failed.reason;
  }

  return {
    provided,
    async stop() {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
