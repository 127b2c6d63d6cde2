/**
 * What the bubblewrap sandbox's own workspace costs (`node bench/execution.ts --workspace-copy`): a run whose
 * agent leaves a 50 MB workspace (50 files of 1 MiB of random bytes), then follow-ups that carry it over and do
 * nothing, each timed from its execution's start to its end, with the workspace a tmpfs copied in and out
 * (`AGENTYARD_SANDBOX_WORKSPACE=tmpfs`) and bound from the host (`bind`). The difference is the two copies. The
 * copy-out alone (copyTreeOut of the same tree, host to host) is timed as well.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../src/config.ts';
import { copyTreeOut } from '../../src/execution/workspace-copy.ts';
import { generateApiKey } from '../../src/identity/api-keys.ts';
import { createLogger } from '../../src/log.ts';
import { startServer } from '../../src/server.ts';
import type { RunningServer } from '../../src/server.ts';

const SHELL_AGENT = path.resolve(import.meta.dirname, '../../test/fixtures/agents/shell-agent.mjs');
const MASTER_KEY = 'c'.repeat(64);
const MIB = 1024 * 1024;

async function api(server: RunningServer, key: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}/api/v1${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.json();
}

interface Execution {
  started_at: Date | null;
  ended_at: Date | null;
  workspace: string | null;
  outcome: string | null;
}

async function executions(server: RunningServer, runId: string): Promise<Execution[]> {
  return (
    await server.ctx.db.query<Execution>(
      'SELECT started_at, ended_at, workspace, outcome FROM executions WHERE run_id = $1 ORDER BY attempt',
      [runId],
    )
  ).rows;
}

async function ended(server: RunningServer, runId: string, count: number): Promise<Execution> {
  for (;;) {
    const list = await executions(server, runId);
    if (list.length >= count && list.at(-1)!.ended_at) return list.at(-1)!;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Execution times (ms) of `samples` follow-ups carrying a 50 MB workspace over, in one workspace mode. */
async function followUpTimes(mode: 'tmpfs' | 'bind', samples: number, dataDir: string): Promise<number[]> {
  const key = generateApiKey();
  const config = loadConfig(
    {},
    { port: 0, host: '127.0.0.1', dataDir, bootstrapApiKey: key, logLevel: 'silent', masterKey: MASTER_KEY },
  );
  const server = await startServer(config, {
    log: createLogger('silent'),
    compose: {
      execution: {
        env: { AGENTYARD_SANDBOX_WORKSPACE: mode, PATH: process.env.PATH },
        settings: {
          harnesses: ['command'],
          defaultHarness: 'command',
          bins: { claude: 'claude', codex: 'codex', gemini: 'gemini', command: SHELL_AGENT },
          workspaceMaxBytes: 256 * MIB,
          pollMs: 50,
        },
      },
    },
  });
  try {
    const script = 'i=0; while [ $i -lt 50 ]; do head -c 1M /dev/urandom > f$i; i=$((i+1)); done';
    const created = await api(server, key, 'POST', '/agent/runs', { prompt: `<<SH\n${script}\nSH>>` });
    const runId = created.run_id as string;
    const first = await ended(server, runId, 1);
    if (first.outcome !== 'succeeded') throw new Error(`the seeding run ended ${first.outcome}`);
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      await api(server, key, 'POST', `/agent/runs/${runId}/followups`, { message: '<<SH\ntrue\nSH>>' });
      const e = await ended(server, runId, i + 2);
      if (e.outcome !== 'succeeded') throw new Error(`follow-up ${i} ended ${e.outcome}`);
      times.push(e.ended_at!.getTime() - e.started_at!.getTime());
    }
    return times;
  } finally {
    await server.stop();
  }
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function benchWorkspaceCopy(samples: number): Promise<void> {
  const dirs: string[] = [];
  const tmp = (prefix: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  try {
    const rows: string[] = [];
    const medians: Record<string, number> = {};
    // alternating rounds: the machine's speed drifts
    const all: Record<'tmpfs' | 'bind', number[]> = { tmpfs: [], bind: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of ['bind', 'tmpfs'] as const)
        all[mode].push(...(await followUpTimes(mode, samples, tmp(`agentyard-bench-ws-${mode}-`))));
    }
    for (const mode of ['bind', 'tmpfs'] as const) {
      medians[mode] = median(all[mode]);
      rows.push(`| ${mode} | ${all[mode].length} | ${medians[mode]!.toFixed(0)} |`);
    }
    // the copy-out alone: 50 MiB in 50 files, host directory to host directory
    const source = tmp('agentyard-bench-copy-src-');
    const { writeFile } = await import('node:fs/promises');
    const { randomBytes } = await import('node:crypto');
    for (let i = 0; i < 50; i++) await writeFile(path.join(source, `f${i}`), randomBytes(MIB));
    const copies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const dest = path.join(tmp('agentyard-bench-copy-dst-'), 'out');
      await mkdir(dest);
      const t = performance.now();
      await copyTreeOut(source, dest, 256 * MIB);
      copies.push(performance.now() - t);
    }
    console.log('\n## The sandbox workspace: a follow-up carrying 50 MiB over (execution start → end), ms\n');
    console.log('| Workspace | executions | median |');
    console.log('|---|---:|---:|');
    for (const r of rows) console.log(r);
    console.log(`\ncopy in + copy out (tmpfs − bind): ${(medians.tmpfs! - medians.bind!).toFixed(0)} ms`);
    console.log(`copy-out alone (copyTreeOut, 50 MiB, median of 5): ${median(copies).toFixed(0)} ms`);
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
