import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { Db } from '../../src/kernel/db.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { openPgliteThread } from '../../src/store/pglite-thread.ts';
import { enabledEngines } from './engines-config.ts';
import type { Engine } from './engines-config.ts';

export type { Engine };
export const ENGINES: readonly Engine[] = enabledEngines();

let pgliteTemplate: Buffer | undefined;

export interface TestDatabase {
  db: Db;
  engine: Engine;
  /** Connection string of this database (PostgreSQL only): for a second process on the same database. */
  url: string | undefined;
  close(): Promise<void>;
}

/** A new, migrated, isolated database on the engine: PGlite from the template dump, or a cloned PostgreSQL database. */
export async function createTestDatabase(engine: Engine): Promise<TestDatabase> {
  if (engine === 'pglite') {
    pgliteTemplate ??= readFileSync(inject('pgliteTemplate'));
    // the engine as `agentyard serve` runs it: PGlite in a thread of its own
    const db = await openPgliteThread({ loadDataDir: new Uint8Array(pgliteTemplate) });
    return { db, engine, url: undefined, close: () => db.close() };
  }
  const serverUrl = inject('pgUrl');
  if (!serverUrl) throw new Error('PostgreSQL is not enabled for this test run');
  const name = `t_${randomBytes(8).toString('hex')}`;
  const admin = await openPostgres({ connectionString: serverUrl, maxConnections: 1 });
  await admin.exec(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplateDb')}`);
  const url = serverUrl.replace(/\/postgres$/, `/${name}`);
  const db = await openPostgres({ connectionString: url });
  return {
    db,
    engine,
    url,
    async close() {
      await db.close();
      await admin.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.close();
    },
  };
}

/** A new, empty database on the engine (no migration applied): for tests of migrating and installing. */
export async function createEmptyDatabase(engine: Engine): Promise<TestDatabase> {
  if (engine === 'pglite') {
    const db = await openPgliteThread({});
    return { db, engine, url: undefined, close: () => db.close() };
  }
  const serverUrl = inject('pgUrl');
  if (!serverUrl) throw new Error('PostgreSQL is not enabled for this test run');
  const name = `e_${randomBytes(8).toString('hex')}`;
  const admin = await openPostgres({ connectionString: serverUrl, maxConnections: 1 });
  await admin.exec(`CREATE DATABASE ${name}`);
  const url = serverUrl.replace(/\/postgres$/, `/${name}`);
  const db = await openPostgres({ connectionString: url });
  return {
    db,
    engine,
    url,
    async close() {
      await db.close();
      await admin.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.close();
    },
  };
}
