/**
 * Array parameters in binary format (src/store/binary-arrays.ts) read back by both engines exactly as sent:
 * NULLs, non-ASCII text, negative and extreme integers, instants before PostgreSQL's epoch and with
 * milliseconds, empty arrays; inside a transaction as well as outside one (PGlite serialises those itself).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { int4Array, textArray, timestamptzArray } from '../../src/store/binary-arrays.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

const TEXTS = ['plain', null, 'ünïcødé ✓ 🚀', '', 'quote " and \\ backslash, {braces}'];
const INTS = [0, -1, 2_147_483_647, -2_147_483_648, 42];
const DATES = [
  new Date('2026-11-24T07:30:01.123Z'),
  new Date('1999-12-31T23:59:59.999Z'),
  new Date('1970-01-01T00:00:00.000Z'),
  new Date('2000-01-01T00:00:00.001Z'),
];

describe.each(ENGINES)('binary array parameters on %s', (engine) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
  });
  afterAll(async () => {
    await database.close();
  });

  const read =
    'SELECT (SELECT array_agg(t ORDER BY n) FROM unnest($1::text[]) WITH ORDINALITY AS x(t, n)) AS texts, $2::int4[] AS ints, ' +
    '(SELECT array_agg(to_char(d AT TIME ZONE \'UTC\', \'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\') ORDER BY n) FROM unnest($3::timestamptz[]) WITH ORDINALITY AS x(d, n)) AS dates, ' +
    'cardinality($4::text[]) AS empty';
  const params = () => [textArray(TEXTS), int4Array(INTS), timestamptzArray(DATES), textArray([])];
  type Read = { texts: (string | null)[]; ints: number[]; dates: string[]; empty: number };

  function expectExact(row: Read | undefined): void {
    expect(row?.texts).toEqual(TEXTS);
    expect(row?.ints).toEqual(INTS);
    expect(row?.dates).toEqual(DATES.map((d) => d.toISOString()));
    expect(row?.empty).toBe(0);
  }

  it('reads back every element exactly, outside a transaction', async () => {
    expectExact((await database.db.query<Read>(read, params())).rows[0]);
  });

  it('reads back every element exactly, inside a transaction', async () => {
    const row = await database.db.transaction(async (tx) => (await tx.query<Read>(read, params())).rows[0]);
    expectExact(row);
  });

  it('refuses an invalid Date rather than sending a wrong instant', () => {
    expect(() => timestamptzArray([new Date(Number.NaN)])).toThrow(RangeError);
  });
});
