/**
 * `agentyard serve` on the embedded engine, as a real OS process: when its PGlite thread dies, it logs why
 * and exits non-zero so that a supervisor restarts it; a SIGTERM still ends it with 0 and no such message.
 * The process runs bin/agentyard.js behind a small entry script whose only addition is a SIGUSR2 handler
 * that ends the thread as a crash would (the test seam of src/store/pglite-thread.ts).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeEntryWithPgliteSeam } from '../support/pglite-seam.ts';
import { TEST_MASTER_KEY } from '../support/server.ts';

const LOST_MESSAGE = 'the database engine has stopped';

interface Serve {
  child: ChildProcess;
  output(): string;
  /** The exit code (or the signal) once the process has exited. */
  exited: Promise<number | NodeJS.Signals | null>;
  url: Promise<string>;
}

const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function startServe(): Serve {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-serve-lost-'));
  dirs.push(dir);
  const entry = writeEntryWithPgliteSeam(dir);
  const child = spawn(
    process.execPath,
    [entry, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', path.join(dir, 'data')],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENTYARD_MASTER_KEY: TEST_MASTER_KEY, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let out = '';
  let found: ((url: string) => void) | undefined;
  const url = new Promise<string>((resolve) => (found = resolve));
  const collect = (d: Buffer): void => {
    out += d.toString();
    const match = /Agentyard listening on (http:\/\/\S+?) /.exec(out);
    if (match) found?.(match[1]!);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  return {
    child,
    output: () => out,
    exited,
    url: Promise.race([url, exited.then(() => Promise.reject(new Error(`serve exited before listening:\n${out}`)))]),
  };
}

describe('agentyard serve on the embedded engine', () => {
  it('exits non-zero, naming the cause, when its PGlite thread dies', async () => {
    const serve = startServe();
    const url = await serve.url;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    serve.child.kill('SIGUSR2');
    expect(await serve.exited).toBe(1);
    const fatal = serve
      .output()
      .split('\n')
      .find((line) => line.includes(LOST_MESSAGE));
    expect(fatal).toBeDefined();
    expect(JSON.parse(fatal!)).toMatchObject({
      level: 60,
      msg: expect.stringMatching(/PGlite thread has stopped \(exit 1\)/),
    });
  }, 60_000);

  it('exits 0 without that message after SIGTERM, which closes the thread itself', async () => {
    const serve = startServe();
    const url = await serve.url;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(serve.output()).not.toContain(LOST_MESSAGE);
    expect(serve.output()).toContain('shutting down');
  }, 60_000);
});
