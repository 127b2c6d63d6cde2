/**
 * Run API benchmark (not a test): figures for docs/performance.md, section "Run API".
 *
 *   node bench/run-api.ts [--rounds 5] [--duration 6] [--connections 50] [--runs 10000,1000000] [--engines pglite,postgres]
 *
 * 1. Run creation throughput: `POST /api/v1/agent/runs` with 50 connections (autocannon) against
 *    `agentyard serve` (the real command, API role, in its own process) on PGlite and on PostgreSQL, as a
 *    ratio to a bare `node:http` server answering the same request shape (bench/support/bare-server.ts),
 *    measured in turns over several rounds (median of the per-round ratios).
 * 2. List latency: p50/p99 of `GET /api/v1/agent/runs` for filtered pages of 50 (first pages and pages
 *    reached by cursor) at 10,000 and at 1,000,000 runs in the team, bulk-inserted with generate_series.
 *
 * PostgreSQL is started the way the tests start it (test/support/postgres-server.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { generateApiKey } from '../src/identity/api-keys.ts';
import { bootstrapIdentity } from '../src/identity/service.ts';
import type { Db } from '../src/kernel/db.ts';
import { prepareDatabase } from '../src/schema.ts';
import { openPostgres } from '../src/store/pg.ts';
import { openDatabase } from '../src/store/open.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import type { PostgresServer } from '../test/support/postgres-server.ts';
import { bulkInsertRuns } from './support/bulk-runs.ts';
import { processTreeCpu } from './support/cpu.ts';
import { startAgentyard, startBareServer } from './support/processes.ts';
import { fmt, percentile } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    runs: { type: 'string', default: '10000,1000000' },
    engines: { type: 'string', default: 'pglite,postgres' },
    'skip-throughput': { type: 'boolean', default: false },
    'skip-list': { type: 'boolean', default: false },
  },
});
const DURATION = Number(values.duration);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const SIZES = values.runs.split(',').map(Number);
const ENGINES = values.engines.split(',') as ('pglite' | 'postgres')[];

const CREATE_BODY = JSON.stringify({
  prompt: 'Fix the flaky integration test in the payments service\nand open a pull request.',
  config: { name: 'bench', model_id: 'model-a' },
});

const tmpDirs: string[] = [];
function tmp(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  tmpDirs.push(dir);
  return dir;
}

interface Throughput {
  rps: number;
  /** CPU of the server's process (its threads, PGlite's included; not PostgreSQL's backends) per request, µs. */
  cpuUs: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function hammer(url: string, key: string, seconds: number, pid: number): Promise<Throughput> {
  const cpuBefore = processTreeCpu(pid);
  const result = await autocannon({
    url: `${url}/api/v1/agent/runs`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: CREATE_BODY,
  });
  const cpuSeconds = processTreeCpu(pid) - cpuBefore;
  return {
    rps: result.requests.average,
    cpuUs: (cpuSeconds * 1e6) / Math.max(1, result.requests.total),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** A short warm-up (JIT, connection pools, caches), then the measured run. */
async function measureCreate(url: string, key: string, pid: number): Promise<Throughput> {
  await hammer(url, key, 2, pid);
  return hammer(url, key, DURATION, pid);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The machine is shared, so its load drifts during a run: the servers are measured in turns (bare, then
 * each engine) for several rounds, each ratio against the bare figure of its own round, and the median of
 * the rounds is reported.
 */
async function throughput(pgUrl: string | undefined): Promise<void> {
  console.log(
    `\n## Run creation throughput (${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s, each after a 2 s warm-up)\n`,
  );
  const servers: { name: string; url: string; key: string; pid: number; stop: () => Promise<void> }[] = [];
  const bare = await startBareServer();
  servers.push({ name: 'bare node:http', url: bare.url, key: 'x', pid: bare.child.pid!, stop: bare.stop });
  for (const engine of ENGINES) {
    const key = generateApiKey();
    let databaseUrl: string | undefined;
    if (engine === 'postgres') {
      const admin = await openPostgres({ connectionString: pgUrl!, maxConnections: 1 });
      await admin.exec('CREATE DATABASE bench_create');
      await admin.close();
      databaseUrl = pgUrl!.replace(/\/postgres$/, '/bench_create');
    }
    const server = await startAgentyard({
      dataDir: tmp(`agentyard-bench-${engine}-`),
      apiKey: key,
      ...(databaseUrl ? { databaseUrl } : {}),
    });
    servers.push({ name: `Agentyard on ${engine}`, url: server.url, key, pid: server.child.pid!, stop: server.stop });
  }
  const results = new Map<string, Throughput[]>(servers.map((s) => [s.name, []]));
  const ratios = new Map<string, number[]>(servers.map((s) => [s.name, []]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const figures = new Map<string, Throughput>();
      for (const server of servers) figures.set(server.name, await measureCreate(server.url, server.key, server.pid));
      const bareRps = figures.get('bare node:http')!.rps;
      const line = [...figures.entries()]
        .map(([name, t]) => `${name} ${fmt(t.rps)}/s (${fmt(t.rps / bareRps, 2)})`)
        .join(', ');
      console.error(`round ${round}: ${line}`);
      for (const [name, t] of figures) {
        results.get(name)!.push(t);
        ratios.get(name)!.push(t.rps / bareRps);
      }
    }
  } finally {
    for (const server of servers) await server.stop();
  }
  console.log(
    '| Server | requests/s (median) | range | p50 ms | p99 ms | non-2xx | errors | ratio to bare (median) | ratios per round | server CPU µs/request (median) |',
  );
  console.log('|---|---:|---|---:|---:|---:|---:|---:|---|---:|');
  for (const server of servers) {
    const runs = results.get(server.name)!;
    const rps = runs.map((t) => t.rps);
    console.log(
      `| ${server.name} | ${fmt(median(rps))} | ${fmt(Math.min(...rps))}–${fmt(Math.max(...rps))} | ${fmt(median(runs.map((t) => t.p50)), 1)} | ` +
        `${fmt(median(runs.map((t) => t.p99)), 1)} | ${runs.reduce((n, t) => n + t.non2xx, 0)} | ${runs.reduce((n, t) => n + t.errors, 0)} | ` +
        `${fmt(median(ratios.get(server.name)!), 2)} | ${ratios
          .get(server.name)!
          .map((r) => fmt(r, 2))
          .join(', ')} | ${fmt(median(runs.map((t) => t.cpuUs)), 1)} |`,
    );
  }
}

interface ListQuery {
  name: string;
  query: string;
}

const LIST_QUERIES: ListQuery[] = [
  { name: 'state + agent name', query: 'state=SUCCEEDED&name=agent-3&limit=50' },
  { name: 'state only', query: 'state=QUEUED&limit=50' },
  { name: 'no filter, sort by created_at asc', query: 'sort_by=created_at&sort_order=asc&limit=50' },
];

/**
 * `requests` sequential requests (one keep-alive connection) of a query: first pages and pages up to 20 deep
 * by cursor. Answers the latency of each, in milliseconds.
 */
async function listSamples(url: string, key: string, q: ListQuery, requests: number): Promise<number[]> {
  const headers = { authorization: `Bearer ${key}` };
  const samples: number[] = [];
  let cursor: string | undefined;
  let depth = 0;
  for (let i = 0; i < requests; i++) {
    const started = performance.now();
    const res = await fetch(`${url}/api/v1/agent/runs?${q.query}${cursor ? `&cursor=${cursor}` : ''}`, { headers });
    const body = (await res.json()) as { runs: unknown[]; page_info: { next_cursor?: string } };
    samples.push(performance.now() - started);
    if (res.status !== 200 || body.runs.length !== 50)
      throw new Error(`list answered ${res.status} with ${body.runs?.length} runs`);
    depth++;
    cursor = depth < 20 ? body.page_info.next_cursor : undefined;
    if (!cursor) depth = 0;
  }
  return samples;
}

async function seed(db: Db, key: string): Promise<{ teamId: string; creatorId: string }> {
  await prepareDatabase(db);
  await bootstrapIdentity(db, key);
  const row = (
    await db.query<{ team_id: string; principal_id: string }>(
      `SELECT team_id, principal_id FROM api_keys WHERE instance_admin ORDER BY created_at LIMIT 1`,
    )
  ).rows[0]!;
  return { teamId: row.team_id, creatorId: row.principal_id };
}

const LIST_ROUNDS = 4;
const LIST_REQUESTS_PER_ROUND = 100;

/**
 * One database and one server per size, filled before the server starts (PGlite is one process's database).
 * The sizes are measured in turns, round after round, so that the machine's load drift hits them alike.
 */
async function listBenchmark(pgUrl: string | undefined): Promise<void> {
  console.log(
    `\n## List latency (GET /agent/runs, pages of 50; ${LIST_ROUNDS} rounds of ${LIST_REQUESTS_PER_ROUND} sequential requests per size and query)\n`,
  );
  console.log(
    '| Engine | Query | ' +
      SIZES.map((n) => `${fmt(n)} runs p50 / p99 ms`).join(' | ') +
      ` | p50 ratio ${fmt(SIZES.at(-1)!)} : ${fmt(SIZES[0]!)} |`,
  );
  console.log(`|---|---|${SIZES.map(() => '---:|').join('')}---:|`);
  for (const engine of ENGINES) {
    const key = generateApiKey();
    const servers: { size: number; url: string; stop: () => Promise<void> }[] = [];
    try {
      for (const size of SIZES) {
        const dataDir = tmp(`agentyard-bench-list-${engine}-${size}-`);
        let databaseUrl: string | undefined;
        let db: Db;
        if (engine === 'postgres') {
          const admin = await openPostgres({ connectionString: pgUrl!, maxConnections: 1 });
          await admin.exec(`CREATE DATABASE bench_list_${size}`);
          await admin.close();
          databaseUrl = pgUrl!.replace(/\/postgres$/, `/bench_list_${size}`);
          db = await openPostgres({ connectionString: databaseUrl });
        } else {
          db = await openDatabase({ databaseUrl: undefined, dataDir });
        }
        const seeded = await seed(db, key);
        const started = performance.now();
        await bulkInsertRuns(db, seeded.teamId, seeded.creatorId, 1, size);
        console.error(`[${engine}] inserted ${fmt(size)} runs in ${fmt((performance.now() - started) / 1000, 1)} s`);
        await db.close();
        const server = await startAgentyard({ dataDir, apiKey: key, ...(databaseUrl ? { databaseUrl } : {}) });
        servers.push({ size, url: server.url, stop: server.stop });
        await listSamples(server.url, key, LIST_QUERIES[0]!, 50); // warm-up
      }
      for (const q of LIST_QUERIES) {
        const samples = new Map<number, number[]>(SIZES.map((n) => [n, []]));
        for (let round = 0; round < LIST_ROUNDS; round++) {
          for (const server of servers)
            samples.get(server.size)!.push(...(await listSamples(server.url, key, q, LIST_REQUESTS_PER_ROUND)));
        }
        const stats = SIZES.map((n) => {
          const sorted = samples.get(n)!.sort((a, b) => a - b);
          return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
        });
        console.log(
          `| ${engine} | ${q.name} | ` +
            stats.map((st) => `${fmt(st.p50, 2)} / ${fmt(st.p99, 2)}`).join(' | ') +
            ` | ${fmt(stats.at(-1)!.p50 / stats[0]!.p50, 2)} |`,
        );
      }
    } finally {
      for (const server of servers) await server.stop();
    }
  }
}

let pg: PostgresServer | undefined;
try {
  if (ENGINES.includes('postgres')) pg = await startPostgresServer();
  console.log(
    `# Run API benchmark — ${new Date().toISOString()}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`,
  );
  if (!values['skip-throughput']) await throughput(pg?.url);
  if (!values['skip-list']) await listBenchmark(pg?.url);
} finally {
  await pg?.stop();
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
}
