/**
 * The test and benchmark PostgreSQL servers (test/support/postgres-server.ts) remove their directory on stop();
 * a killed run leaves it behind, a data directory of up to several GB. The next server start removes those
 * that are old and have no running postmaster, and nothing else.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeStalePostgresDirs } from '../support/postgres-server.ts';

describe('stale PostgreSQL server directories', () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const serverDir = (name: string, options: { pid?: number; ageMs: number }): string => {
    const dir = path.join(root, name);
    mkdirSync(path.join(dir, 'data'), { recursive: true });
    if (options.pid !== undefined) writeFileSync(path.join(dir, 'data', 'postmaster.pid'), `${options.pid}\n/data\n`);
    const at = new Date(Date.now() - options.ageMs);
    utimesSync(dir, at, at);
    return dir;
  };

  it('removes old directories whose postmaster is gone, and keeps running, recent and foreign ones', () => {
    root = mkdtempSync(path.join(tmpdir(), 'agentyard-stale-'));
    const hour = 60 * 60_000;
    // PID 2^22 + 1 is above Linux's pid_max limit: no process has it
    const killed = serverDir('agentyard-pg-killed', { pid: 4_194_305, ageMs: 2 * hour });
    const neverStarted = serverDir('agentyard-pg-nopid', { ageMs: 3 * hour });
    const running = serverDir('agentyard-pg-running', { pid: process.pid, ageMs: 5 * hour });
    const starting = serverDir('agentyard-pg-starting', { ageMs: 60_000 });
    const foreign = serverDir('someone-else-pg', { ageMs: 9 * hour });

    const removed = removeStalePostgresDirs(root);

    expect(removed.sort()).toEqual([killed, neverStarted].sort());
    expect([killed, neverStarted].map(existsSync)).toEqual([false, false]);
    expect([running, starting, foreign].map(existsSync)).toEqual([true, true, true]);
  });
});
