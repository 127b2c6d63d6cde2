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

/**
 * Once per test run: a real PostgreSQL server with a migrated template database, and a migrated PGlite data
 * directory dumped to a file. Each test then gets its own database cloned from a template in milliseconds.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const engines = enabledEngines();
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-test-'));
  let server: PostgresServer | undefined;

  const pglite = await PGlite.create();
  await prepareDatabase(await wrapPglite(pglite));
  const template = path.join(dir, 'pglite-template.tar');
  writeFileSync(template, Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer()));
  await pglite.close();
  project.provide('pgliteTemplate', template);

  if (engines.includes('postgres')) {
    server = await startPostgresServer();
    const admin = await openPostgres({ connectionString: server.url });
    await admin.exec(`CREATE DATABASE ${TEMPLATE_DB}`);
    await admin.close();
    const templateUrl = server.url.replace(/\/postgres$/, `/${TEMPLATE_DB}`);
    const db = await openPostgres({ connectionString: templateUrl });
    await prepareDatabase(db);
    await db.close();
    project.provide('pgUrl', server.url);
    project.provide('pgTemplateDb', TEMPLATE_DB);
  } else {
    project.provide('pgUrl', '');
    project.provide('pgTemplateDb', '');
  }

  return async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
