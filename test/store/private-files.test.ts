/**
 * The data directory is private: `agentyard serve` (a real process, on PGlite in <data dir>/pgdata) starts
 * with umask 077, tightens an existing directory that other users could read (saying so), and after its
 * start no file or directory in it — PGlite's files and WAL, the master key, the admin key — has a group or
 * world bit.
 */
import { chmodSync, readdirSync, lstatSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnAgentyard } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';

/** Every path under `dir` with its mode. */
function walk(dir: string): { file: string; mode: number }[] {
  const out: { file: string; mode: number }[] = [];
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const info = lstatSync(file);
    if (info.isSymbolicLink()) continue;
    out.push({ file, mode: info.mode & 0o7777 });
    if (info.isDirectory()) out.push(...walk(file));
  }
  return out;
}

describe('the data directory on disk', () => {
  let serve: AgentyardProcess | undefined;
  afterAll(async () => {
    await serve?.stop();
  });

  it('after a start on PGlite: no file or directory with a group or world bit; an open one is tightened', async () => {
    serve = spawnAgentyard(['serve', '--port', '0', '--host', '127.0.0.1'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'info',
    });
    // a data directory left open by an earlier start or made by hand: the start tightens it and says so
    chmodSync(serve.dataDir, 0o755);
    writeFileSync(path.join(serve.dataDir, 'notes.txt'), 'left by hand\n', { mode: 0o644 });
    chmodSync(path.join(serve.dataDir, 'notes.txt'), 0o644);
    await serve.printed(/listening on/, 'the server to listen', 120_000);

    const output = serve.output();
    expect(output).toContain('group and world permissions removed');
    expect(statSync(serve.dataDir).mode & 0o777).toBe(0o700);
    const entries = walk(serve.dataDir);
    const names = entries.map((e) => path.relative(serve!.dataDir, e.file));
    expect(names).toEqual(expect.arrayContaining(['master.key', 'admin.key', 'pgdata', 'notes.txt']));
    expect(names.some((n) => n.startsWith(`pgdata${path.sep}pg_wal${path.sep}`))).toBe(true);
    expect(entries.length).toBeGreaterThan(100);
    const shared = entries.filter((e) => (e.mode & 0o077) !== 0).map((e) => `${e.file} ${e.mode.toString(8)}`);
    expect(shared).toEqual([]);
  }, 180_000);
});
