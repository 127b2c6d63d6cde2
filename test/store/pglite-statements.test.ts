/**
 * PGlite's named prepared statements (src/store/pglite-statements.ts): a statement is parsed once and then
 * only bound and executed; answers must be what `PGlite.query` answers, across DDL, errors and eviction.
 */
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgliteStatements } from '../../src/store/pglite-statements.ts';

describe('PGlite prepared statements', () => {
  let pglite: PGlite;
  beforeAll(async () => {
    pglite = await PGlite.create();
    await pglite.exec(
      'CREATE TABLE things (id int PRIMARY KEY, name text, tags text[], at timestamptz, doc jsonb, blob bytea)',
    );
  });
  afterAll(async () => {
    await pglite?.close();
  });

  const preparedNames = async (): Promise<string[]> =>
    (await pglite.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map(
      (r) => r.name,
    );

  it('answers what PGlite.query answers, for every parameter and result type the service uses', async () => {
    const statements = new PgliteStatements(pglite);
    const at = new Date('2026-11-23T12:00:00.5Z');
    const params = [1, 'one', ['a', 'b'], at, { k: [1, null, 'x'] }, new Uint8Array([0, 1, 255])];
    const insert = 'INSERT INTO things VALUES ($1, $2, $3, $4, $5, $6) RETURNING *';
    const ours = await statements.query(insert, params);
    await pglite.query('DELETE FROM things');
    const theirs = await pglite.query(insert, params);
    expect(ours.rows).toEqual(theirs.rows);
    expect(ours.affectedRows).toBe(1);
    const select = 'SELECT * FROM things WHERE id = $1 AND at = $2';
    expect((await statements.query(select, [1, at])).rows).toEqual((await pglite.query(select, [1, at])).rows);
    expect((await statements.query('UPDATE things SET name = $1 WHERE id > 0', ['renamed'])).affectedRows).toBe(1);
    expect((await statements.query('SELECT name FROM things WHERE id = $1', [1])).rows).toEqual([{ name: 'renamed' }]);
  });

  it('sends bytea parameters as their bytes, every byte value intact', async () => {
    const statements = new PgliteStatements(pglite);
    const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const res = await statements.query<{ blob: Uint8Array; cut: Uint8Array; n: number }>(
      'SELECT $1::bytea AS blob, substring($1::bytea FROM 2 FOR 3) AS cut, length($1::bytea) AS n',
      [every],
    );
    expect(Buffer.from(res.rows[0]!.blob).equals(every)).toBe(true);
    expect([...res.rows[0]!.cut]).toEqual([1, 2, 3]);
    expect(res.rows[0]!.n).toBe(256);
  });

  it('binds text parameters as they are: null, empty, beyond the BMP, 40 kB, mixed with bytes', async () => {
    const statements = new PgliteStatements(pglite);
    expect((await statements.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    const texts = ['1', null, 'text with é, ✓ and 𝄞', ''];
    const res = await statements.query<{ a: string; b: null; c: string; d: string; bytes: number }>(
      'SELECT $1::text AS a, $2::text AS b, $3::text AS c, $4::text AS d, octet_length($3::text) AS bytes',
      texts,
    );
    expect(res.rows).toEqual([{ a: '1', b: null, c: texts[2], d: '', bytes: Buffer.byteLength(texts[2]!) }]);
    const long = 'x'.repeat(40_000);
    expect((await statements.query('SELECT $1::text AS v, length($1::text) AS n', [long])).rows).toEqual([
      { v: long, n: 40_000 },
    ]);
    // a short value after a long one on the same statement: nothing of the long one is left over
    expect((await statements.query('SELECT $1::text AS v', ['b'])).rows).toEqual([{ v: 'b' }]);
    const json = Buffer.from('{"a":"é"}');
    const mixed = await statements.query<{ t: string; n: null; b: Uint8Array; j: Uint8Array; e: string }>(
      'SELECT $1::text AS t, $2::text AS n, $3::bytea AS b, $4::bytea AS j, $5::text AS e',
      ['1', null, new Uint8Array([0, 1, 2, 255]), json, 'é'],
    );
    expect(mixed.rows[0]).toMatchObject({ t: '1', n: null, e: 'é' });
    expect([...mixed.rows[0]!.b]).toEqual([0, 1, 2, 255]);
    expect(Buffer.from(mixed.rows[0]!.j).equals(json)).toBe(true);
  });

  it('parses a statement once, however often it runs', async () => {
    const statements = new PgliteStatements(pglite);
    const before = (await preparedNames()).length;
    for (let i = 0; i < 20; i++) await statements.query('SELECT $1::int + 1 AS n', [i]);
    expect((await preparedNames()).length).toBe(before + 1);
  });

  it('prepares again when a table changes under SELECT *', async () => {
    const statements = new PgliteStatements(pglite);
    await pglite.exec('CREATE TABLE shifting (id int); INSERT INTO shifting VALUES (1)');
    expect((await statements.query('SELECT * FROM shifting')).rows).toEqual([{ id: 1 }]);
    await pglite.exec("ALTER TABLE shifting ADD COLUMN label text DEFAULT 'new'");
    expect((await statements.query('SELECT * FROM shifting')).rows).toEqual([{ id: 1, label: 'new' }]);
  });

  it('keeps working after a statement fails, with the error and its SQLSTATE', async () => {
    const statements = new PgliteStatements(pglite);
    await expect(statements.query('INSERT INTO things (id) VALUES ($1)', [1])).rejects.toMatchObject({ code: '23505' });
    await expect(statements.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    expect((await statements.query('SELECT count(*)::int AS n FROM things')).rows).toEqual([{ n: 1 }]);
  });

  it('deallocates the least recently used statement beyond its limit', async () => {
    const statements = new PgliteStatements(pglite, { max: 3 });
    const before = await preparedNames();
    for (let i = 0; i < 10; i++) await statements.query(`SELECT ${i} AS n`);
    const added = (await preparedNames()).filter((n) => !before.includes(n));
    expect(added).toHaveLength(3);
    expect((await statements.query('SELECT 9 AS n')).rows).toEqual([{ n: 9 }]);
  });

  it('waits for an open transaction to end, as PGlite.query does', async () => {
    const statements = new PgliteStatements(pglite);
    let outside: Promise<unknown> | undefined;
    await pglite.transaction(async (tx) => {
      await tx.query('INSERT INTO things (id, name) VALUES (50, $1)', ['in tx']);
      outside = statements.query('SELECT name FROM things WHERE id = 50');
      await new Promise((r) => setTimeout(r, 30));
    });
    expect(((await outside) as { rows: unknown[] }).rows).toEqual([{ name: 'in tx' }]);
  });
});
