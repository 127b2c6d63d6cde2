/**
 * Named prepared statements on PostgreSQL (src/store/pg.ts): a statement with parameters is prepared on a
 * connection once it has been seen twice, falls back to unnamed when a table changed under its `SELECT *`,
 * and can be turned off (a connection pooler that does not keep prepared statements).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/kernel/db.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

describe.skipIf(!ENGINES.includes('postgres'))('prepared statements on PostgreSQL', () => {
  let database: TestDatabase;
  const opened: Db[] = [];
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    for (const db of opened) await db.close();
    await database?.close();
  });

  /** One connection, so that the statements it prepared can be listed on it. */
  async function open(preparedStatements?: boolean): Promise<Db> {
    const db = await openPostgres({
      connectionString: database.url!,
      maxConnections: 1,
      ...(preparedStatements === undefined ? {} : { preparedStatements }),
    });
    opened.push(db);
    return db;
  }
  const prepared = async (db: Db): Promise<string[]> =>
    (await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements')).rows
      .map((r) => r.name)
      .filter((n) => n.startsWith('ay_'));

  it('prepares a statement with parameters once it has run twice, and answers the same', async () => {
    const db = await open();
    const answers = [];
    for (let i = 0; i < 4; i++) {
      answers.push((await db.query<{ n: number }>('SELECT $1::int * 3 AS n', [i])).rows[0]!.n);
      if (i === 0) expect(await prepared(db)).toEqual([]);
    }
    expect(answers).toEqual([0, 3, 6, 9]);
    expect(await prepared(db)).toHaveLength(1);
  });

  it('runs a statement unnamed from then on when a table changed under its SELECT *', async () => {
    const db = await open();
    await db.exec('CREATE TABLE shifting (id int); INSERT INTO shifting VALUES (1)');
    for (let i = 0; i < 3; i++)
      expect((await db.query('SELECT * FROM shifting WHERE id = $1', [1])).rows).toEqual([{ id: 1 }]);
    await db.exec("ALTER TABLE shifting ADD COLUMN label text DEFAULT 'new'");
    expect((await db.query('SELECT * FROM shifting WHERE id = $1', [1])).rows).toEqual([{ id: 1, label: 'new' }]);
    expect((await db.query('SELECT * FROM shifting WHERE id = $1', [1])).rows).toEqual([{ id: 1, label: 'new' }]);
  });

  it('prepares nothing when turned off', async () => {
    const db = await open(false);
    for (let i = 0; i < 4; i++) await db.query('SELECT $1::int + 100 AS n', [i]);
    expect(await prepared(db)).toEqual([]);
  });
});
