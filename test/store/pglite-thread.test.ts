/**
 * PGlite in a thread of its own (src/store/pglite-thread.ts): the engine `agentyard serve` runs without
 * DATABASE_URL. It must behave as the in-process PGlite does — values, errors with their SQLSTATE,
 * transactions that commit or roll back as one, LISTEN/NOTIFY — and must neither hold the process open
 * when idle nor leave a caller waiting when the thread is gone.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/kernel/db.ts';
import { openPgliteThread, terminatePgliteThreadsForTesting } from '../../src/store/pglite-thread.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('PGlite in a thread', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openPgliteThread({});
    await db.exec(
      'CREATE TABLE items (id int PRIMARY KEY, label text NOT NULL, blob bytea, at timestamptz, doc jsonb)',
    );
  });
  afterAll(async () => {
    await db?.close();
  });

  it('carries values both ways: text, bytea from a Buffer, timestamps, JSON', async () => {
    const at = new Date('2026-11-23T10:00:00.123Z');
    const { rows, rowCount } = await db.query<{ id: number; label: string; blob: Uint8Array; at: Date; doc: unknown }>(
      'INSERT INTO items VALUES ($1, $2, $3, $4, $5) RETURNING *',
      [1, 'one', Buffer.from('bytes'), at, { nested: [1, 'two'] }],
    );
    expect(rowCount).toBe(1);
    expect(rows[0]).toMatchObject({ id: 1, label: 'one', at, doc: { nested: [1, 'two'] } });
    expect(Buffer.from(rows[0]!.blob).toString()).toBe('bytes');
    expect((await db.query('UPDATE items SET label = label WHERE id > 0')).rowCount).toBe(1);
  });

  it('carries any bytes exactly, in and out of a transaction, from a view into a larger buffer, and empty', async () => {
    // every byte value, including sequences that are not UTF-8; the bytes cross the thread as a latin1 string
    const every = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7) % 256));
    const backing = Buffer.concat([Buffer.from('before'), every, Buffer.from('after')]);
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 6, every.length);
    await db.exec('CREATE TABLE blobs (id int PRIMARY KEY, blob bytea NOT NULL)');
    await db.query('INSERT INTO blobs VALUES ($1, $2), ($3, $4)', [1, view, 2, new Uint8Array(0)]);
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO blobs VALUES ($1, $2)', [3, every]);
    });
    const { rows } = await db.query<{ id: number; blob: Uint8Array }>('SELECT id, blob FROM blobs ORDER BY id');
    expect(rows.map((r) => Buffer.from(r.blob).toString('hex'))).toEqual([
      every.toString('hex'),
      '',
      every.toString('hex'),
    ]);
    const { rows: compared } = await db.query<{ same: boolean }>('SELECT blob = $1 AS same FROM blobs WHERE id = 1', [
      every,
    ]);
    expect(compared[0]!.same).toBe(true);
    // values beside the bytes keep their types, including an object shaped like the bytes' own encoding
    const { rows: mixed } = await db.query<{ doc: unknown; label: string; blob: Uint8Array }>(
      'SELECT $1::jsonb AS doc, $2::text AS label, $3::bytea AS blob',
      [{ latin1: 'not bytes' }, 'ÿ text', Buffer.from([0xff, 0x00])],
    );
    expect(mixed[0]).toMatchObject({ doc: { latin1: 'not bytes' }, label: 'ÿ text' });
    expect(Buffer.from(mixed[0]!.blob).toString('hex')).toBe('ff00');
  });

  it('raises database errors with their SQLSTATE code and constraint', async () => {
    await db.query("INSERT INTO items (id, label) VALUES (2, 'two')");
    const err = await db.query("INSERT INTO items (id, label) VALUES (2, 'again')").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ code: '23505', constraint: 'items_pkey' });
    expect((err as Error).message).toMatch(/duplicate key/);
  });

  it('commits a transaction as one, and rolls it back as one when its function throws', async () => {
    const count = await db.transaction(async (tx) => {
      await tx.query("INSERT INTO items (id, label) VALUES (10, 'ten')");
      await tx.query("INSERT INTO items (id, label) VALUES (11, 'eleven')");
      return (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM items WHERE id >= 10')).rows[0]!.n;
    });
    expect(count).toBe(2);
    await expect(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO items (id, label) VALUES (20, 'twenty')");
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    await expect(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO items (id, label) VALUES (21, 'twenty-one')");
        await tx.query("INSERT INTO items (id, label) VALUES (21, 'duplicate')");
      }),
    ).rejects.toMatchObject({ code: '23505' });
    const ids = (await db.query<{ id: number }>('SELECT id FROM items WHERE id >= 10 ORDER BY id')).rows.map(
      (r) => r.id,
    );
    expect(ids).toEqual([10, 11]);
  });

  it('keeps statements outside a transaction out of it while it is open', async () => {
    let outsideDone = false;
    const tx = db.transaction(async (q) => {
      await q.query("INSERT INTO items (id, label) VALUES (30, 'thirty')");
      const outside = db.query<{ n: number }>('SELECT count(*)::int AS n FROM items WHERE id = 30').then((r) => {
        outsideDone = true;
        return r.rows[0]!.n;
      });
      // the thread answers in order: had the outside read run, it would be answered before this one
      await q.query('SELECT 1');
      expect(outsideDone).toBe(false);
      // handed out unawaited: awaiting it here would wait for this very transaction to end
      return { outside };
    });
    // the outside read runs after the commit, so it sees the row
    expect(await (await tx).outside).toBe(1);
  });

  it('answers many concurrent callers, each with its own result', async () => {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => db.query<{ v: number }>('SELECT $1::int * 2 AS v', [i])),
    );
    expect(answers.map((a) => a.rows[0]!.v)).toEqual(Array.from({ length: 200 }, (_, i) => i * 2));
  });

  it('delivers NOTIFY payloads to a listener until it unsubscribes', async () => {
    const heard: string[] = [];
    let heardFirst!: () => void;
    const first = new Promise<void>((r) => (heardFirst = r));
    const unsubscribe = await db.listen('thread_test', (payload) => {
      heard.push(payload);
      heardFirst();
    });
    await db.notify('thread_test', 'first');
    await first;
    expect(heard).toEqual(['first']);
    await unsubscribe();
    // a second listener hears the second payload: by then the first would have too
    const later: string[] = [];
    let heardSecond!: () => void;
    const second = new Promise<void>((r) => (heardSecond = r));
    await db.listen('thread_test', (payload) => {
      later.push(payload);
      heardSecond();
    });
    await db.notify('thread_test', 'second');
    await second;
    expect(later).toEqual(['second']);
    expect(heard).toEqual(['first']);
  });
});

describe('the PGlite thread and its process', () => {
  it('keeps data in its directory across a close and a new open', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-pglite-thread-'));
    try {
      const first = await openPgliteThread({ dataDir: dir });
      await first.exec("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')");
      await first.close();
      const second = await openPgliteThread({ dataDir: dir });
      expect((await second.query('SELECT v FROM kept')).rows).toEqual([{ v: 'still here' }]);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects calls made after close instead of leaving them waiting', async () => {
    const db = await openPgliteThread({});
    await db.close();
    await expect(db.query('SELECT 1')).rejects.toThrow(/closed/);
  });

  it('reports a thread that dies without close() to onLost, once, and fails every call after it', async () => {
    const db = await openPgliteThread({});
    const causes: Error[] = [];
    let lost!: () => void;
    const told = new Promise<void>((r) => (lost = r));
    db.onLost((cause) => {
      causes.push(cause);
      lost();
    });
    const removed: Error[] = [];
    const remove = db.onLost((cause) => removed.push(cause));
    remove();
    await terminatePgliteThreadsForTesting();
    await told;
    // a second report would come in the same turn as the first
    await new Promise((r) => setImmediate(r));
    expect(causes.length).toBe(1);
    expect(causes[0]!.message).toMatch(/PGlite thread has stopped \(exit 1\)/);
    expect(removed).toEqual([]);
    await expect(db.query('SELECT 1')).rejects.toThrow(/PGlite thread has stopped/);
    // a listener that comes late still learns of it
    const late = await new Promise<Error>((resolve) => db.onLost(resolve));
    expect(late).toBe(causes[0]);
    await db.close();
    expect(causes).toHaveLength(1);
  });

  it('does not report a thread ended by close() as lost', async () => {
    const db = await openPgliteThread({});
    const causes: Error[] = [];
    db.onLost((cause) => causes.push(cause));
    await db.query('SELECT 1');
    // close() resolves once the thread's exit has been handled
    await db.close();
    await terminatePgliteThreadsForTesting();
    expect(causes).toEqual([]);
  });

  it('does not keep an idle process alive, and keeps one alive while a query is pending', () => {
    // a script that forgets to close: it must still end once nothing waits for the database
    const script = `
      import { openPgliteThread } from ${JSON.stringify(path.join(ROOT, 'src/store/pglite-thread.ts'))};
      const db = await openPgliteThread({});
      const { rows } = await db.query('SELECT 41 + 1 AS answer');
      console.log(rows[0].answer);
    `;
    const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-pglite-idle-'));
    const file = path.join(dir, 'forgets-to-close.mjs');
    writeFileSync(file, script);
    const result = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
    rmSync(dir, { recursive: true, force: true });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('42');
    expect(result.status).toBe(0);
  });
});
