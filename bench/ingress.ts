/**
 * Webhook ingress benchmark (not a test): figures for docs/performance.md, section "Webhook ingress".
 *
 *   node bench/ingress.ts [--duration 10] [--connections 50] [--engines pglite,postgres] [--modes token,signature]
 *                         [--rss-deliveries 1000000] [--rss-minutes 10] [--skip-rss]
 *
 * 1. Accepted deliveries per second, token mode: 1 KB JSON bodies with distinct identities, 50 connections
 *    (autocannon), against Agentyard's ingress (bench/ingress-server.ts, its own process) on PGlite and on
 *    PostgreSQL, as a ratio to a bare `node:http` server answering 202 to the same requests
 *    (bench/ingress-bare.ts). Target ≥ 0.40.
 * 2. The same with Standard Webhooks signatures (every request signed afresh by the standardwebhooks
 *    library in the load generator, for both servers). Target ≥ 0.30.
 * 3. p50/p99 latency at half of the measured maximum rate.
 * 4. RSS of the server process after 10,000 deliveries and after --rss-deliveries (or as many as fit in
 *    --rss-minutes). Target ≤ 1.5×.
 * 5. Where the CPU goes in the measured rounds of 1 and 2 (from /proc): µs per request of each stage — the
 *    server's HTTP thread, its database (PGlite's thread, or the PostgreSQL backends), V8's and libuv's helper
 *    threads, the load generator — and how many of the machine's cores were busy. Their quotient, the ratio
 *    the two servers would show if both kept every core busy, tells CPU cost apart from idle time.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Webhook } from 'standardwebhooks';
import { openPostgres } from '../src/store/pg.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { processTreeCpu, threadCpu, threadCpuSince } from './support/cpu.ts';
import { SERVICE_NODE_FLAGS } from './support/processes.ts';
import type { PostgresServer } from '../test/support/postgres-server.ts';
import { fmt } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    engines: { type: 'string', default: 'pglite,postgres' },
    modes: { type: 'string', default: 'token,signature' },
    'rss-deliveries': { type: 'string', default: '1000000' },
    'rss-minutes': { type: 'string', default: '10' },
    'skip-rss': { type: 'boolean', default: false },
    'skip-throughput': { type: 'boolean', default: false },
  },
});
const DURATION = Number(values.duration);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const ENGINES = values.engines.split(',') as ('pglite' | 'postgres')[];
const MODES = values.modes.split(',') as Mode[];
for (const mode of MODES)
  if (mode !== 'token' && mode !== 'signature') throw new Error(`--modes: unknown mode ${mode}`);
const ROOT = new URL('../', import.meta.url).pathname;

// ---------------------------------------------------------------------------------------------- processes

interface Child {
  info: { url: string; token?: string; whsec?: string; tokenUrl?: string; signatureUrl?: string };
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startChild(
  script: string,
  env: Record<string, string>,
  nodeFlags: readonly string[] = [],
): Promise<Child> {
  const child = spawn(process.execPath, [...nodeFlags, script], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      AGENTYARD_MASTER_KEY: 'b'.repeat(64),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise<Child['info']>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /READY (\{.*\})/.exec(out);
      if (match) resolve(JSON.parse(match[1]!) as Child['info']);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    info,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

// ----------------------------------------------------------------------------------------------- requests

let counter = 0;
const PAD = 'x'.repeat(1024);
/** A 1 KB JSON body whose `id` makes every delivery distinct (its body hash is its identity). */
function body(): string {
  const head = `{"event":"order.created","id":"${process.pid}-${Date.now()}-${++counter}","data":{"pad":"`;
  return `${head}${PAD.slice(0, 1024 - head.length - 4)}"}}`;
}

type Mode = 'token' | 'signature';

function requestFor(mode: Mode, target: Child['info'], baseline: boolean) {
  const url = new URL(
    baseline ? `${target.url}/webhooks/w/bench` : mode === 'token' ? target.tokenUrl! : target.signatureUrl!,
  );
  const signer = mode === 'signature' ? new Webhook(serverUnderTest!.info.whsec!) : undefined;
  return {
    url: url.origin,
    path: url.pathname,
    setup: (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }) => {
      const text = body();
      req.method = 'POST';
      req.body = text;
      if (mode === 'token') {
        req.headers = { 'content-type': 'application/json', authorization: `Bearer ${serverUnderTest!.info.token}` };
      } else {
        const id = `msg_${counter}`;
        const at = new Date();
        req.headers = {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signer!.sign(id, at, text),
        };
      }
      return req;
    },
  };
}

interface Load {
  rps: number;
  /** Seconds the load ran (autocannon's own count). */
  seconds: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

async function load(
  mode: Mode,
  target: Child['info'],
  baseline: boolean,
  options: { duration?: number; amount?: number; rate?: number },
): Promise<Load> {
  const r = requestFor(mode, target, baseline);
  const result = await autocannon({
    url: r.url,
    connections: CONNECTIONS,
    ...(options.amount ? { amount: options.amount } : { duration: options.duration ?? DURATION }),
    ...(options.rate ? { overallRate: options.rate } : {}),
    requests: [{ path: r.path, setupRequest: r.setup as never }],
  });
  return {
    rps: result.requests.average,
    seconds: result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
  };
}

// ----------------------------------------------------------------------------------------------- the runs

let serverUnderTest: Child | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
let pg: PostgresServer | undefined;

async function startUnderTest(engine: 'pglite' | 'postgres'): Promise<Child> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentyard-bench-ingress-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = { AGENTYARD_DATA_DIR: dataDir };
  if (engine === 'postgres') {
    pg ??= await startPostgresServer();
    const name = `bench_${Date.now().toString(36)}`;
    const admin = await openPostgres({ connectionString: pg.url, maxConnections: 1 });
    await admin.exec(`CREATE DATABASE ${name}`);
    await admin.close();
    env.DATABASE_URL = pg.url.replace(/\/postgres$/, `/${name}`);
  }
  serverUnderTest = await startChild('bench/ingress-server.ts', env, SERVICE_NODE_FLAGS);
  return serverUnderTest;
}

const lines: string[] = [];
function report(line: string): void {
  lines.push(line);
  console.log(line);
}

async function throughput(): Promise<void> {
  const bare = await startChild('bench/ingress-bare.ts', {});
  cleanups.push(() => bare.stop());
  for (const engine of ENGINES) {
    const server = await startUnderTest(engine);
    for (const mode of MODES) {
      await load(mode, server.info, false, { duration: 3 }); // warm-up
      await load(mode, bare.info, true, { duration: 3 });
      // Alternate the two servers: on a shared machine, load that drifts affects both alike.
      let ours = 0;
      let base = 0;
      let failures = 0;
      const roundRatios: number[] = [];
      const oursCpu = new CpuTally();
      const bareCpu = new CpuTally();
      for (let round = 0; round < ROUNDS; round++) {
        const o = await oursCpu.measure(server, engine, () => load(mode, server.info, false, {}));
        const b = await bareCpu.measure(bare, undefined, () => load(mode, bare.info, true, {}));
        roundRatios.push(o.rps / b.rps);
        ours += o.rps / ROUNDS;
        base += b.rps / ROUNDS;
        failures += o.non2xx + o.errors;
      }
      cpuLines.push(cpuRow(engine, mode, oursCpu, bareCpu));
      const rate = Math.floor(ours / 2);
      const half = await load(mode, server.info, false, { rate });
      const baseHalf = await load(mode, bare.info, true, { rate });
      const target = mode === 'token' ? 0.4 : 0.3;
      report(
        `| ${engine} | ${mode === 'token' ? 'token' : 'Standard Webhooks signature'} | ${fmt(ours)} | ${fmt(base)} | **${fmt(ours / base, 2)}** (target ≥ ${target}; rounds ${roundRatios.map((r) => fmt(r, 2)).join(' / ')}) | ${fmt(rate)}/s: p50 ${half.p50} ms, p99 ${half.p99} ms (bare: p99 ${baseHalf.p99} ms) | ${failures + half.non2xx + half.errors} |`,
      );
    }
    await server.stop();
  }
}

/** CPU seconds by stage over the measured rounds of one server, and the requests they answered. */
class CpuTally {
  readonly seconds = new Map<string, number>();
  requests = 0;
  wall = 0;

  async measure(target: Child, engine: 'pglite' | 'postgres' | undefined, run: () => Promise<Load>): Promise<Load> {
    const pid = target.child.pid!;
    const postmaster = engine === 'postgres' ? pg?.postmasterPid() : undefined;
    const threadsBefore = threadCpu(pid);
    const dbBefore = postmaster === undefined ? 0 : processTreeCpu(postmaster);
    const loadBefore = process.cpuUsage();
    const result = await run();
    const loadSpent = process.cpuUsage(loadBefore);
    const threads = threadCpuSince(threadsBefore, threadCpu(pid));
    const add = (stage: string, seconds: number) => this.seconds.set(stage, (this.seconds.get(stage) ?? 0) + seconds);
    for (const [name, seconds] of threads) {
      if (engine === undefined) add('server', seconds);
      else if (name === 'MainThread') add('http', seconds);
      else if (name === 'WorkerThread') add('database', seconds);
      else add('helpers', seconds);
    }
    if (postmaster !== undefined) add('database', processTreeCpu(postmaster) - dbBefore);
    add('load generator', (loadSpent.user + loadSpent.system) / 1e6);
    this.requests += result.total;
    this.wall += result.seconds;
    return result;
  }

  /** µs of CPU per request in a stage. */
  perRequest(stage: string): number {
    return ((this.seconds.get(stage) ?? 0) * 1e6) / Math.max(1, this.requests);
  }

  get totalPerRequest(): number {
    let total = 0;
    for (const stage of this.seconds.keys()) total += this.perRequest(stage);
    return total;
  }

  get coresBusy(): number {
    let total = 0;
    for (const seconds of this.seconds.values()) total += seconds;
    return total / Math.max(1e-9, this.wall);
  }
}

const cpuLines: string[] = [];

function cpuRow(engine: string, mode: Mode, ours: CpuTally, bare: CpuTally): string {
  const us = (n: number) => fmt(n, 1);
  return (
    `| ${engine} | ${mode === 'token' ? 'token' : 'Standard Webhooks signature'} | ${us(ours.perRequest('http'))} | ${us(ours.perRequest('database'))} | ` +
    `${us(ours.perRequest('helpers'))} | ${us(ours.perRequest('load generator'))} | ${us(ours.totalPerRequest)} | ${fmt(ours.coresBusy, 2)} | ` +
    `${us(bare.perRequest('server'))} | ${us(bare.perRequest('load generator'))} | ${us(bare.totalPerRequest)} | ${fmt(bare.coresBusy, 2)} | ` +
    `**${fmt(bare.totalPerRequest / ours.totalPerRequest, 2)}** |`
  );
}

async function rss(): Promise<void> {
  const wanted = Number(values['rss-deliveries']);
  const deadline = Date.now() + Number(values['rss-minutes']) * 60_000;
  for (const engine of ENGINES) {
    const server = await startUnderTest(engine);
    const pid = server.child.pid!;
    await load('token', server.info, false, { amount: 10_000 });
    await new Promise((r) => setTimeout(r, 2_000));
    const at10k = rssMb(pid);
    let sent = 10_000;
    let failed = 0;
    const engineDeadline = Date.now() + (deadline - Date.now()) / (ENGINES.length - ENGINES.indexOf(engine));
    while (sent < wanted && Date.now() < engineDeadline) {
      const chunk = Math.min(50_000, wanted - sent);
      const r = await load('token', server.info, false, { amount: chunk });
      sent += chunk;
      failed += r.non2xx + r.errors;
    }
    await new Promise((r) => setTimeout(r, 2_000));
    const atEnd = rssMb(pid);
    report(
      `| ${engine} | ${fmt(at10k)} MB | ${fmt(sent)} | ${fmt(atEnd)} MB | **${fmt(atEnd / at10k, 2)}×** (target ≤ 1.5×) | ${failed} |`,
    );
    await server.stop();
  }
}

/** The machine's load average (1, 5, 15 minutes): a shared machine moves every figure, so each run says how busy it was. */
function loadAverage(): string {
  return loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');
}

try {
  report(`load average at start: ${loadAverage()}`);
  if (!values['skip-throughput']) {
    report(
      `\nThroughput (${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${DURATION} s per server, 1 KB JSON bodies, distinct identities)\n`,
    );
    report(
      '| engine | mode | Agentyard accepted/s | bare node:http 202/s | ratio | latency at half the max rate | non-2xx + errors |',
    );
    report('| --- | --- | ---: | ---: | ---: | --- | ---: |');
    await throughput();
    report(
      `\nCPU per request in the measured rounds, µs (from /proc; ${availableParallelism()} cores on this machine)\n`,
    );
    report(
      '| engine | mode | HTTP thread | database | V8/libuv helpers | load generator | all | cores busy | bare server | its load generator | all (bare) | cores busy (bare) | ratio at equal CPU |',
    );
    report('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const line of cpuLines) report(line);
  }
  if (!values['skip-rss']) {
    report('\nMemory (token mode, RSS of the server process)\n');
    report('| engine | RSS after 10,000 | deliveries sent | RSS after them | ratio | non-2xx + errors |');
    report('| --- | ---: | ---: | ---: | ---: | ---: |');
    await rss();
  }
  report(`load average at end: ${loadAverage()}`);
} finally {
  await serverUnderTest?.stop();
  for (const c of cleanups.reverse()) await c();
  await pg?.stop();
}
