/**
 * Hostile input benchmark (not a test): figures for docs/performance.md, section "Hostile input".
 *
 *   node bench/hostile-input.ts [--duration 20] [--rate 200] [--connections 10]
 *
 * Webhook deliveries (token mode, 1 KB bodies, a fixed rate with autocannon) against Agentyard on PGlite
 * (bench/hostile-server.ts, its own process): p50/p99 with no attack, then for the same time while an attacker
 * keeps sending bursts of five parallel validate requests, each of 8 files of 240 KiB of nested `[` (1.9 MB),
 * and keeps syncing a git factory of 100,000 files. Prints both and the ratio; target p99 < 250 ms under attack.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { SERVICE_NODE_FLAGS } from './support/processes.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    rate: { type: 'string', default: '200' },
    connections: { type: 'string', default: '10' },
    attack: { type: 'string' },
    attacks: { type: 'string', default: 'validate,sync' },
  },
});
const DURATION = Number(values.duration);
const RATE = Number(values.rate);
const CONNECTIONS = Number(values.connections);
const ROOT = new URL('../', import.meta.url).pathname;

const scratch = values.attack ? '' : mkdtempSync(path.join(tmpdir(), 'agentyard-bench-hostile-'));
const adminKey = process.env.BENCH_ADMIN_KEY ?? `ayk_${randomBytes(24).toString('base64url')}`;

interface Info {
  url: string;
  token: string;
  tokenUrl: string;
}

const loopLines: string[] = [];

/** The server's event-loop delay since the last call (bench/hostile-server.ts answers SIGUSR2). */
async function loopDelay(child: ChildProcess): Promise<string> {
  const before = loopLines.length;
  child.kill('SIGUSR2');
  const deadline = Date.now() + 5000;
  while (loopLines.length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const line = loopLines[loopLines.length - 1] ?? '{}';
  const d = JSON.parse(line) as { p50?: number; p99?: number; max?: number };
  return `p50 ${d.p50} ms, p99 ${d.p99} ms, max ${d.max} ms`;
}

function startServer(): Promise<{ info: Info; child: ChildProcess }> {
  const extra = process.env.BENCH_SERVER_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...extra, 'bench/hostile-server.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      AGENTYARD_DATA_DIR: path.join(scratch, 'data'),
      AGENTYARD_MASTER_KEY: 'b'.repeat(64),
      AGENTYARD_BOOTSTRAP_API_KEY: adminKey,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      for (const m of out.matchAll(/LOOP (\{.*\})\n/g)) loopLines.push(m[1]!);
      out = out.replace(/LOOP \{.*\}\n/g, '');
      const match = /READY (\{.*\})/.exec(out);
      if (match) resolve({ info: JSON.parse(match[1]!) as Info, child });
    });
    child.once('exit', (code) => reject(new Error(`hostile-server exited with ${code}`)));
  });
}

/** A bare repository whose main holds factory.yaml and 100,000 agent files (one blob, 100 files a directory). */
async function hundredThousandFiles(): Promise<string> {
  const bare = path.join(scratch, 'big.git');
  const run = (args: string[], input?: string) =>
    new Promise<void>((resolve, reject) => {
      const git = spawn('git', args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'] });
      git.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git ${args[0]} exited ${code}`))));
      if (input !== undefined) git.stdin!.end(input);
    });
  await run(['init', '--bare', '--quiet', '--initial-branch=main', bare]);
  const factory = 'name: big\n';
  let stream = `blob\nmark :1\ndata ${factory.length}\n${factory}\ncommit refs/heads/main\ncommitter B <b@example.com> 1700000000 +0000\ndata 3\nbig\nM 100644 :1 factory.yaml\n`;
  for (let i = 0; i < 100_000; i++) stream += `M 100644 :1 agents/g${Math.floor(i / 100)}/f${i % 100}.md\n`;
  await run(['--git-dir', bare, 'fast-import', '--quiet'], `${stream}\n`);
  return bare;
}

async function deliveries(
  info: Info,
  seconds = DURATION,
): Promise<{ p50: number; p99: number; max: number; total: number; failed: number }> {
  const url = new URL(info.tokenUrl);
  let n = 0;
  const result = await autocannon({
    url: url.origin,
    connections: CONNECTIONS,
    duration: seconds,
    overallRate: RATE,
    requests: [
      {
        path: url.pathname,
        setupRequest: ((req: { method?: string; body?: string; headers?: Record<string, string> }) => {
          req.method = 'POST';
          req.body = JSON.stringify({ id: `${process.pid}-${++n}-${Date.now()}`, pad: 'x'.repeat(960) });
          req.headers = { 'content-type': 'application/json', authorization: `Bearer ${info.token}` };
          return req;
        }) as never,
      },
    ],
  });
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    total: result.requests.total,
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

/** 8 files of 240 KiB of nested `[` and a factory.yaml: 1.9 MB of JSON. */
const NESTED_FILES = Array.from({ length: 8 }, (_, i) => ({
  path: `runners/r${i}.yaml`,
  content: `a: ${'['.repeat(240 * 1024)}\n`,
}));
const NESTED_BODY = JSON.stringify({ files: [{ path: 'factory.yaml', content: 'name: x\n' }, ...NESTED_FILES] });

/** Keeps attacking until `stop`: five parallel hostile validations at a time, and back-to-back syncs. */
async function attack(info: Info, factoryId: string, stop: { done: boolean }) {
  const counts = { validations: 0, validationMs: 0, syncs: 0, syncMs: 0, statuses: new Map<number, number>() };
  const count = (status: number) => counts.statuses.set(status, (counts.statuses.get(status) ?? 0) + 1);
  const kinds = values.attacks.split(',');
  const validations = (async () => {
    while (!stop.done && kinds.includes('validate')) {
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 5 }, () =>
          fetch(`${info.url}/api/v1/factory-files/validate`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: NESTED_BODY,
          }).then(async (r) => {
            await r.arrayBuffer();
            return r.status;
          }),
        ),
      );
      answers.forEach(count);
      counts.validations += 5;
      counts.validationMs += performance.now() - started;
    }
  })();
  const syncs = (async () => {
    while (!stop.done && kinds.includes('sync')) {
      const started = performance.now();
      const r = await fetch(`${info.url}/api/v1/factories/${factoryId}/sync`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminKey}` },
      });
      await r.arrayBuffer();
      count(r.status);
      counts.syncs++;
      counts.syncMs += performance.now() - started;
    }
  })();
  await Promise.all([validations, syncs]);
  return counts;
}

if (values.attack) {
  // The attacker's own process, so that its 1.9 MB bodies do not delay the deliveries' load generator.
  const [url, factoryId] = values.attack.split(',') as [string, string];
  const stop = { done: false };
  process.on('SIGTERM', () => {
    stop.done = true;
  });
  const counts = await attack({ url, token: '', tokenUrl: '' }, factoryId, stop);
  process.stdout.write(
    `attack: ${counts.validations} hostile validations (mean ${(counts.validationMs / Math.max(counts.validations / 5, 1)).toFixed(0)} ms per burst of 5), ` +
      `${counts.syncs} syncs of 100,000 files (mean ${(counts.syncMs / Math.max(counts.syncs, 1)).toFixed(0)} ms); statuses ${JSON.stringify(Object.fromEntries(counts.statuses))}\n`,
  );
  process.exit(0);
}

const { info, child } = await startServer();
try {
  const bare = await hundredThousandFiles();
  const created = await fetch(`${info.url}/api/v1/factories`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminKey}` },
    body: JSON.stringify({ name: 'big', source: { type: 'git', url: `file://${bare}`, poll_interval_seconds: 0 } }),
  });
  const factoryId = ((await created.json()) as { id: string }).id;
  // Warm-up: JIT, the first validation worker, the first fetch of the big repository.
  await deliveries(info, 5);
  await fetch(`${info.url}/api/v1/factory-files/validate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: NESTED_BODY,
  });
  await fetch(`${info.url}/api/v1/factories/${factoryId}/sync`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}` },
  });

  await loopDelay(child);
  const quiet = await deliveries(info);
  const quietLoop = await loopDelay(child);
  const attacker = spawn(
    process.execPath,
    [new URL(import.meta.url).pathname, '--attack', `${info.url},${factoryId}`, '--attacks', values.attacks],
    {
      cwd: ROOT,
      env: { ...process.env, BENCH_ADMIN_KEY: adminKey },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let attackOut = '';
  attacker.stdout!.on('data', (d: Buffer) => {
    attackOut += d.toString();
  });
  const attackerDone = new Promise((r) => attacker.once('exit', r));
  const loud = await deliveries(info);
  const loudLoop = await loopDelay(child);
  attacker.kill('SIGTERM');
  await attackerDone;

  console.log(`deliveries at ${RATE}/s for ${DURATION} s, ${CONNECTIONS} connections (PGlite)`);
  console.log('| | p50 | p99 | max | answered 202 | failed |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const [label, r] of [
    ['no attack', quiet],
    ['under attack', loud],
  ] as const)
    console.log(`| ${label} | ${r.p50} ms | ${r.p99} ms | ${r.max} ms | ${r.total - r.failed} | ${r.failed} |`);
  console.log(
    `ratio p99 under attack / no attack: ${(loud.p99 / Math.max(quiet.p99, 1)).toFixed(2)}; target p99 < 250 ms under attack: ${loud.p99 < 250 ? 'met' : 'NOT met'}`,
  );
  console.log(`server event-loop delay: no attack ${quietLoop}; under attack ${loudLoop}`);
  console.log(attackOut.trim());
} finally {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
}
