/**
 * The `agentyard` command as a real OS process (`node bin/agentyard.js serve …`, `… worker …`), for tests
 * that need a second server or a worker beside the one in the test process: its own data directory, its
 * output collected, and a stop that never waits on a process that has already exited.
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestDatabase } from './db.ts';
import { TEST_MASTER_KEY } from './server.ts';

const BIN = path.resolve(import.meta.dirname, '../../bin/agentyard.js');

export interface AgentyardProcess {
  child: ChildProcess;
  /** Its fresh data directory (`--data-dir`), removed by `stop()`. */
  dataDir: string;
  /** Its stdout and stderr so far. */
  output(): string;
  /**
   * The first match of `pattern` in its output (stdout and stderr), now or once it prints it: a line the process
   * prints, never a timer. Rejects when the process exits first or after `timeoutMs`, saying `what`.
   */
  printed(pattern: RegExp, what: string, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Settles when the process has exited. */
  exited: Promise<void>;
  /** SIGTERM unless it has exited already; waits for the exit, then removes the data directory. */
  stop(): Promise<void>;
}

/**
 * Runs `agentyard <args> --data-dir <fresh directory>` with exactly `env` as its environment (pass
 * `process.env` in it to inherit this one's).
 */
export function spawnAgentyard(args: readonly string[], env: NodeJS.ProcessEnv): AgentyardProcess {
  const dataDir = mkdtempSync(path.join(tmpdir(), `agentyard-${args[0] ?? 'process'}-`));
  const child = spawn(process.execPath, [BIN, ...args, '--data-dir', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  const printedMore = new EventEmitter();
  printedMore.setMaxListeners(0);
  const collect = (d: Buffer) => {
    out += d.toString();
    printedMore.emit('more');
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  child.once('exit', () => printedMore.emit('exit'));
  const printed = (pattern: RegExp, what: string, timeoutMs = 60_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const finish = (err: Error | undefined, match?: RegExpExecArray) => {
        printedMore.off('more', look);
        printedMore.off('exit', gone);
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(match!);
      };
      const look = () => {
        const match = pattern.exec(out);
        if (match) finish(undefined, match);
      };
      const gone = () => finish(new Error(`the process exited before ${what}:\n${out}`));
      const timer = setTimeout(
        () => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${out}`)),
        timeoutMs,
      );
      printedMore.on('more', look);
      printedMore.once('exit', gone);
      look();
      if (child.exitCode !== null || child.signalCode !== null) gone();
    });
  return {
    child,
    dataDir,
    output: () => out,
    printed,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The environment of a `serve` process sharing a test's PostgreSQL database: this process's PATH and HOME,
 * the database, the master key every test server uses, `warn` logs, then `extra`.
 */
export function serveEnv(database: TestDatabase, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  if (!database.url) throw new Error('a second server process needs a PostgreSQL test database (it has a URL)');
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: database.url,
    AGENTYARD_MASTER_KEY: TEST_MASTER_KEY,
    LOG_LEVEL: 'warn',
    ...extra,
  };
}
