import { execFile, execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, chownSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { outputMatches } from './signals.ts';

/** Finds Debian's PostgreSQL server binaries (the newest installed major version). */
export function findPostgresBin(): string | undefined {
  if (process.env.AGENTYARD_PG_BIN && existsSync(path.join(process.env.AGENTYARD_PG_BIN, 'postgres')))
    return process.env.AGENTYARD_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface PostgresServer {
  url: string;
  /** The postmaster's PID (its backends are its children), once it has written postmaster.pid. */
  postmasterPid(): number | undefined;
  stop(): Promise<void>;
}

const STALE_AFTER_MS = 60 * 60_000;

/** The PID in a data directory's postmaster.pid, while the server has one. */
function readPostmasterPid(dataDir: string): number | undefined {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : NaN;
  return Number.isInteger(pid) ? pid : undefined;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the directories of servers that a killed test or benchmark run left behind (stop() removes its own):
 * older than an hour and without a running postmaster. Each holds a data directory of up to several GB.
 */
export function removeStalePostgresDirs(root = tmpdir(), now = Date.now()): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync(root)) {
    if (!entry.startsWith('agentyard-pg-')) continue;
    const dir = path.join(root, entry);
    try {
      if (now - statSync(dir).mtimeMs < STALE_AFTER_MS) continue;
      const pid = readPostmasterPid(path.join(dir, 'data'));
      if (pid !== undefined && isRunning(pid)) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return removed;
}

/**
 * Starts a throwaway PostgreSQL server on a free loopback port in a temporary directory. PostgreSQL refuses
 * to run as root, so as root it runs as the `postgres` system user that Debian's package creates.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  removeStalePostgresDirs();
  const bin = findPostgresBin();
  if (!bin)
    throw new Error('PostgreSQL server binaries not found (apt-get install postgresql, or set AGENTYARD_PG_BIN)');
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-pg-'));
  const dataDir = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const runAs = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const [initCmd, initArgs] = runAs(path.join(bin, 'initdb'), [
    '-D',
    dataDir,
    '-A',
    'trust',
    '-U',
    'postgres',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  // not Sync: the global setup migrates PGlite meanwhile
  await promisify(execFile)(initCmd, initArgs);
  const port = await freePort();
  const [cmd, args] = runAs(path.join(bin, 'postgres'), [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-h',
    '127.0.0.1',
    '-k',
    dir,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=400',
    '-c',
    'shared_buffers=256MB',
    '-c',
    'lc_messages=C',
  ]);
  const child: ChildProcess = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  // the server says when it is ready (messages in English: lc_messages=C below)
  await outputMatches(child.stderr!, /database system is ready to accept connections/, {
    what: 'PostgreSQL to start',
    sofar: () => stderr,
    timeoutMs: 30_000,
  });
  const postmasterPid = (): number | undefined => readPostmasterPid(dataDir);
  return {
    url,
    postmasterPid,
    async stop() {
      if (child.exitCode === null) {
        // Signal the postmaster itself: runuser does not pass signals on.
        const pid = postmasterPid();
        if (pid !== undefined) process.kill(pid, 'SIGINT');
        else child.kill('SIGINT');
        await Promise.race([new Promise((r) => child.once('exit', r)), new Promise((r) => setTimeout(r, 10_000))]);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
