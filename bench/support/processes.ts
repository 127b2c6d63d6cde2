import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/support/postgres-server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Node's flags for Agentyard's server, as the Dockerfile, `npm start` and the `agentyard` command run it. */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function waitForHealth(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${stderr()}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start: ${stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  };
}

/**
 * `agentyard serve` as a user starts it (bin/agentyard.js), API role only so that no executor claims the
 * runs the benchmark creates, request logging at warn level.
 */
export async function startAgentyard(env: {
  dataDir: string;
  apiKey: string;
  databaseUrl?: string;
  /** More flags for node (a benchmark's `--cpu-prof`). */
  nodeFlags?: readonly string[];
}): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...SERVICE_NODE_FLAGS,
      ...(env.nodeFlags ?? []),
      'bin/agentyard.js',
      'serve',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--roles',
      'api',
    ],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        AGENTYARD_DATA_DIR: env.dataDir,
        AGENTYARD_BOOTSTRAP_API_KEY: env.apiKey,
        AGENTYARD_MASTER_KEY: 'b'.repeat(64),
        LOG_LEVEL: 'warn',
        ...(env.databaseUrl ? { DATABASE_URL: env.databaseUrl } : {}),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child, () => stderr);
  return { url, child, stop: stopper(child) };
}

export async function startBareServer(): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['bench/support/bare-server.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      const match = /READY (\S+)/.exec(d.toString());
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return { url, child, stop: stopper(child) };
}
