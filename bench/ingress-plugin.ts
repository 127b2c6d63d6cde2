/**
 * The ingress as a Fastify route against the direct node:http path (not a test): figures for docs/decisions.md,
 * "The ingress answers from node:http".
 *
 *   node bench/ingress-plugin.ts [--rounds 4] [--duration 6] [--connections 50] [--engines pglite,postgres]
 *
 * Two ingress processes of bench/ingress-server.ts on one engine, one serving deliveries straight from
 * node:http (as `agentyard serve` does), one through a Fastify route (INGRESS_THROUGH_FASTIFY=1: router, hooks,
 * request and reply objects, then the same handler). Token mode, 1 KB JSON bodies with distinct identities,
 * 50 connections (autocannon), the two servers in alternating rounds. Prints each round's accepted/s and the
 * median of the per-round ratios Fastify : direct (the bar is ≥ 0.95), and the CPU each server's HTTP
 * thread spent per request (from /proc), which a loaded machine disturbs less than the rate.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { openPostgres } from '../src/store/pg.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import type { PostgresServer } from '../test/support/postgres-server.ts';
import { threadCpu } from './support/cpu.ts';
import { SERVICE_NODE_FLAGS } from './support/processes.ts';
import { fmt } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '50' },
    engines: { type: 'string', default: 'pglite,postgres' },
  },
});
const DURATION = Number(values.duration);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const ENGINES = values.engines.split(',') as ('pglite' | 'postgres')[];
const ROOT = new URL('../', import.meta.url).pathname;

interface Ingress {
  tokenUrl: string;
  token: string;
  pid: number;
  stop(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
let pg: PostgresServer | undefined;

async function startIngress(engine: 'pglite' | 'postgres', throughFastify: boolean): Promise<Ingress> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentyard-bench-plugin-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = { AGENTYARD_DATA_DIR: dataDir };
  if (engine === 'postgres') {
    pg ??= await startPostgresServer();
    const name = `bench_${Date.now().toString(36)}_${throughFastify ? 'f' : 'd'}`;
    const admin = await openPostgres({ connectionString: pg.url, maxConnections: 1 });
    await admin.exec(`CREATE DATABASE ${name}`);
    await admin.close();
    env.DATABASE_URL = pg.url.replace(/\/postgres$/, `/${name}`);
  }
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, 'bench/ingress-server.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      AGENTYARD_MASTER_KEY: 'b'.repeat(64),
      ...(throughFastify ? { INGRESS_THROUGH_FASTIFY: '1' } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise<{ tokenUrl: string; token: string }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /READY (\{.*\})/.exec(out);
      if (match) resolve(JSON.parse(match[1]!) as { tokenUrl: string; token: string });
    });
    child.once('exit', (code) => reject(new Error(`the ingress server exited with ${code}`)));
  });
  return {
    ...info,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

let counter = 0;
const PAD = 'x'.repeat(1024);
function body(): string {
  const head = `{"event":"order.created","id":"${process.pid}-${Date.now()}-${++counter}","data":{"pad":"`;
  return `${head}${PAD.slice(0, 1024 - head.length - 4)}"}}`;
}

/** CPU seconds of the server's HTTP thread (its main thread) so far. */
const httpCpu = (target: Ingress) => threadCpu(target.pid).get('MainThread') ?? 0;

async function load(target: Ingress, duration: number): Promise<{ rps: number; failures: number; cpuUs: number }> {
  const cpuBefore = httpCpu(target);
  const url = new URL(target.tokenUrl);
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${target.token}` };
  const result = await autocannon({
    url: url.origin,
    connections: CONNECTIONS,
    duration,
    requests: [
      {
        path: url.pathname,
        setupRequest: ((req: Record<string, unknown>) => ({ ...req, method: 'POST', body: body(), headers })) as never,
      },
    ],
  });
  const cpuUs = ((httpCpu(target) - cpuBefore) * 1e6) / Math.max(1, result.requests.total);
  return { rps: result.requests.average, failures: result.non2xx + result.errors + result.timeouts, cpuUs };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

try {
  console.log(`\n${ROUNDS} alternating rounds of ${DURATION} s per server, ${CONNECTIONS} connections, token mode\n`);
  console.log(
    '| engine | round | direct accepted/s | Fastify route accepted/s | ratio | HTTP thread µs/request, direct | Fastify route |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  const summary: string[] = [];
  for (const engine of ENGINES) {
    const direct = await startIngress(engine, false);
    const viaFastify = await startIngress(engine, true);
    await load(direct, 3); // warm-up
    await load(viaFastify, 3);
    const ratios: number[] = [];
    const cpu = { direct: [] as number[], fastify: [] as number[] };
    let failures = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate which goes first: load on a shared machine drifts.
      const order = round % 2 ? [direct, viaFastify] : [viaFastify, direct];
      const results = new Map<Ingress, number>();
      for (const target of order) {
        const r = await load(target, DURATION);
        results.set(target, r.rps);
        (target === direct ? cpu.direct : cpu.fastify).push(r.cpuUs);
        failures += r.failures;
      }
      const ratio = results.get(viaFastify)! / results.get(direct)!;
      ratios.push(ratio);
      console.log(
        `| ${engine} | ${round} | ${fmt(results.get(direct)!)} | ${fmt(results.get(viaFastify)!)} | ${fmt(ratio, 3)} | ${fmt(cpu.direct.at(-1)!, 1)} | ${fmt(cpu.fastify.at(-1)!, 1)} |`,
      );
    }
    summary.push(
      `${engine}: Fastify route : direct, median of ${ROUNDS} rounds ${fmt(median(ratios), 3)} (rounds ${ratios.map((r) => fmt(r, 3)).join(', ')}); HTTP thread µs/request, medians: direct ${fmt(median(cpu.direct), 1)}, Fastify route ${fmt(median(cpu.fastify), 1)}; non-2xx + errors ${failures}`,
    );
    await direct.stop();
    await viaFastify.stop();
  }
  console.log(`\n${summary.join('\n')}`);
} finally {
  for (const c of cleanups.reverse()) await c();
  await pg?.stop();
}
