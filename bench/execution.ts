/**
 * Run execution benchmark (not a test): figures for docs/performance.md, section "Run execution".
 *
 *   node bench/execution.ts [--engines pglite,postgres] [--samples 300] [--runs 20000] [--concurrency 128]
 *   node bench/execution.ts --workspace-copy [--samples 5]   (the sandbox workspace's copies in and out)
 *
 * With idle executors and the in-process `noop` harness (no agent process: this measures the queue, not a CLI):
 * 1. Queue-to-start latency, one run at a time: from sending `POST /api/v1/agent/runs` to
 *    (a) the run's INPROGRESS change published on the server's bus (the moment the executor has started it:
 *        the equivalent of a job queue's handler start), and
 *    (b) the INPROGRESS event received by a client on the run's SSE stream (created → INPROGRESS seen by a client).
 * 2. End-to-end throughput: a backlog of runs queued at once (multi-row inserts of 500, each announced),
 *    drained to SUCCEEDED by the executors: runs/s.
 * 2b. The deadline check (docs/governance.md, "Budgets"): enqueue → INPROGRESS committed for runs without budgets
 *    and runs with every per-run budget set, interleaved one by one in each round; the median over rounds of the
 *    ratio of their p50s.
 * 3. graphile-worker on the same PostgreSQL server: `addJob` → handler start, one job at a time (the same
 *    sequential method as 1a), and its drain rate for a backlog of no-op jobs at the same concurrency.
 * 4. The claim's concurrency check (docs/governance.md, "Concurrency keys"): run committed → INPROGRESS with the
 *    check and, in alternating rounds on the same server, without it (its two functions replaced by ones that let
 *    every run pass), for runs of no factory and for keyed runs of a factory with `maxActiveRuns`; the p50 of each
 *    and their ratio. `--only-concurrency` runs this part alone.
 *
 * The machine is shared and noisy: on PostgreSQL the latency samples are taken in rounds (`--rounds`), each
 * round Agentyard's samples then graphile-worker's, both running the whole time; the table gives the
 * percentiles of all samples, and the comparison the median over rounds of each round's p50 and their ratio.
 *
 * The server runs in this process (PGlite in memory, or a PostgreSQL server started as the tests start it).
 */
import type { CompositionOptions } from '../src/composition.ts';
import { RUNS_QUEUED_TOPIC } from '../src/kernel/topics.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { makeWorkerUtils, run as runGraphile } from 'graphile-worker';
import pgLib from 'pg';
import { loadConfig } from '../src/config.ts';
import { generateApiKey } from '../src/identity/api-keys.ts';
import { createLogger } from '../src/log.ts';
import { prepareQueuedRun } from '../src/runs/service.ts';
import { startServer } from '../src/server.ts';
import type { RunningServer } from '../src/server.ts';
import { startedOnBus } from './support/started-on-bus.ts';
import { openPostgres } from '../src/store/pg.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { insertRuns, setRunConcurrency } from '../src/engine/engine.ts';
import { newId } from '../src/kernel/ids.ts';
import { executionFunctions } from '../src/engine/functions.ts';
import { benchWorkspaceCopy } from './support/workspace-copy.ts';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: 'pglite,postgres' },
    samples: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '6' },
    runs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '128' },
    'skip-graphile': { type: 'boolean', default: false },
    'only-concurrency': { type: 'boolean', default: false },
    'workspace-copy': { type: 'boolean', default: false },
  },
});
if (values['workspace-copy']) {
  // only the sandbox workspace's copies (bench/support/workspace-copy.ts)
  await benchWorkspaceCopy(Math.max(1, Math.min(Number(values.samples), 20)));
  process.exit(0);
}
const ENGINES = values.engines.split(',').filter(Boolean) as ('pglite' | 'postgres')[];
const SAMPLES = Number(values.samples);
const ROUNDS = Math.max(1, Number(values.rounds));
const RUNS = Number(values.runs);
const CONCURRENCY = Number(values.concurrency);
const MASTER_KEY = 'b'.repeat(64);

const tmpDirs: string[] = [];
function tmp(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  tmpDirs.push(dir);
  return dir;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const fmt = (n: number, digits = 1) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function createDatabase(pgUrl: string, name: string): Promise<string> {
  const admin = await openPostgres({ connectionString: pgUrl, maxConnections: 1 });
  await admin.exec(`CREATE DATABASE ${name}`);
  await admin.close();
  return pgUrl.replace(/\/postgres$/, `/${name}`);
}

/** When each run was claimed by this process's executors (its execution began). */
const claimedAt = new Map<string, number>();

async function startBenchServer(
  engine: 'pglite' | 'postgres',
  databaseUrl: string | undefined,
): Promise<{ server: RunningServer; key: string }> {
  const key = generateApiKey();
  const execution: CompositionOptions['execution'] = {
    env: {},
    onClaimed: (ids: string[]) => {
      const t = performance.now();
      for (const id of ids) claimedAt.set(id, t);
    },
    settings: {
      concurrency: CONCURRENCY,
      harnesses: ['noop'],
      defaultHarness: 'noop',
      pollMs: 1_000,
      heartbeatMs: 5_000,
      leaseMs: 30_000,
    },
  };
  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: tmp(`agentyard-bench-exec-${engine}-`),
      bootstrapApiKey: key,
      logLevel: 'silent',
      masterKey: MASTER_KEY,
      databaseUrl,
    },
  );
  const server = await startServer(config, {
    log: createLogger('silent'),
    compose: { execution },
  });
  server.ctx.config.publicUrl = server.url;
  return { server, key };
}

async function createRun(url: string, key: string, i: number): Promise<string> {
  const res = await fetch(`${url}/api/v1/agent/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: `bench run ${i}` }),
  });
  if (res.status !== 200) throw new Error(`create: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { run_id: string }).run_id;
}

/** Reads the run's SSE stream until its INPROGRESS state event; answers when it arrived. */
async function inProgressOverSse(url: string, key: string, runId: string): Promise<number> {
  const controller = new AbortController();
  const res = await fetch(`${url}/api/v1/agent/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${key}` },
    signal: controller.signal,
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended before INPROGRESS');
      buffer += value;
      if (buffer.includes('"state":"INPROGRESS"')) return performance.now();
    }
  } finally {
    controller.abort();
  }
}

interface Latency {
  /** RunService.create called in process → the executor has the run (claim committed, execution begun). */
  enqueueToClaimed: number[];
  /** RunService.create called → INPROGRESS committed. */
  enqueueToStarted: number[];
  /** RunService.create resolved (the run committed) → the executor has the run. */
  committedToClaimed: number[];
  /** RunService.create resolved → INPROGRESS committed. */
  committedToStarted: number[];
  /** POST /api/v1/agent/runs sent → INPROGRESS committed. */
  post: number[];
  /** POST sent → INPROGRESS received over SSE by the client. */
  sse: number[];
}

function emptyLatency(): Latency {
  return {
    enqueueToClaimed: [],
    enqueueToStarted: [],
    committedToClaimed: [],
    committedToStarted: [],
    post: [],
    sse: [],
  };
}

function appendLatency(into: Latency, from: Latency): void {
  for (const k of Object.keys(into) as (keyof Latency)[]) into[k].push(...from[k]);
}

const pause = () => new Promise((r) => setTimeout(r, 2));

/** `samples` runs one at a time on each path, after `warmup` unmeasured ones. */
async function measureLatency(server: RunningServer, key: string, samples: number, warmup: number): Promise<Latency> {
  const bus = startedOnBus(server);
  const service = server.services.runs;
  const teamId = (await server.ctx.db.query<{ id: string }>('SELECT id FROM teams ORDER BY created_at LIMIT 1'))
    .rows[0]!.id;
  const result = emptyLatency();
  try {
    for (let i = 0; i < samples + warmup; i++) {
      const t0 = performance.now();
      const { run } = await service.create({ teamId, prompt: `bench run ${i}`, source: 'API', creator: null });
      const t1 = performance.now();
      const started = await bus.wait(run.id);
      const claimed = claimedAt.get(run.id)!;
      if (i >= warmup) {
        result.enqueueToClaimed.push(claimed - t0);
        result.enqueueToStarted.push(started - t0);
        // a run handed off to an executor of this process is claimed by the statement that commits it: 0
        result.committedToClaimed.push(Math.max(0, claimed - t1));
        result.committedToStarted.push(started - t1);
      }
      await pause();
    }
    for (let i = 0; i < samples + warmup; i++) {
      const t0 = performance.now();
      const runId = await createRun(server.url, key, i);
      const started = await bus.wait(runId);
      if (i >= warmup) result.post.push(started - t0);
      await pause();
    }
    for (let i = 0; i < samples + warmup; i++) {
      const t0 = performance.now();
      const runId = await createRun(server.url, key, i);
      const seen = await inProgressOverSse(server.url, key, runId);
      if (i >= warmup) result.sse.push(seen - t0);
      await pause();
    }
  } finally {
    bus.stop();
  }
  return result;
}

/** Budgets a run sets in the budgeted half of the deadline-check comparison (none is reached by a noop run). */
const BUDGETS = { max_duration_seconds: 3600, max_turns: 100, max_tokens: 1_000_000, max_cost_usd: 10 };

/**
 * The deadline check against the queue-to-start path: in each round, `samples` runs without budgets then
 * `samples` with every per-run budget set, one at a time (RunService.create called → INPROGRESS committed), in
 * the same server; answers each round's p50 of both.
 */
async function measureBudgetOverhead(
  server: RunningServer,
  rounds: number,
  samples: number,
): Promise<{ plain: number; budgeted: number }[]> {
  const bus = startedOnBus(server);
  const service = server.services.runs;
  const teamId = (await server.ctx.db.query<{ id: string }>('SELECT id FROM teams ORDER BY created_at LIMIT 1'))
    .rows[0]!.id;
  const one = async (i: number, config: Record<string, unknown> | undefined): Promise<number> => {
    const t0 = performance.now();
    const { run } = await service.create({
      teamId,
      prompt: `budget bench ${i}`,
      source: 'API',
      creator: null,
      ...(config ? { config } : {}),
    });
    const started = await bus.wait(run.id);
    await pause();
    return started - t0;
  };
  const out: { plain: number; budgeted: number }[] = [];
  try {
    for (let i = 0; i < 20; i++) await one(i, i % 2 ? BUDGETS : undefined);
    for (let r = 0; r < rounds; r++) {
      const plain: number[] = [];
      const budgeted: number[] = [];
      // interleaved, so that a slow moment of the shared machine falls on both
      for (let i = 0; i < samples; i++) {
        plain.push(await one(i, undefined));
        budgeted.push(await one(i, BUDGETS));
      }
      out.push({ plain: median(plain), budgeted: median(budgeted) });
    }
  } finally {
    bus.stop();
  }
  return out;
}

/**
 * The claim's concurrency check off: the two functions the lock and claim functions call for it
 * (src/engine/functions.sql) replaced by ones that let every run pass, as the claim was before the check.
 */
const CHECK_OFF = `
CREATE OR REPLACE FUNCTION ay_concurrency_open(p_factory text, p_key text, p_limit integer)
RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT true $$;
CREATE OR REPLACE FUNCTION ay_concurrency_admit(p_ids text[])
RETURNS text[] LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$ BEGIN RETURN p_ids; END $$;`;

/** The check as functions.sql defines it. */
function checkOn(): string {
  const sql = executionFunctions().sql;
  const at = (name: string) => {
    const start = sql.indexOf(`CREATE OR REPLACE FUNCTION ${name}(`);
    return sql.slice(start, sql.indexOf('$$;', sql.indexOf('$$', sql.indexOf('AS $$', start) + 5)) + 3);
  };
  return `${at('ay_concurrency_open')}\n${at('ay_concurrency_admit')}`;
}

const CHECK_KINDS = ['run of no factory', 'keyed run of a factory with maxActiveRuns'] as const;

/**
 * Run committed → INPROGRESS with the claim's concurrency check on and off, in alternating rounds (the same
 * server, the same database), for a run of no factory and for a keyed run of a capped factory (the check's
 * counts and advisory locks all taken). Runs are created in a transaction and announced after it, as the
 * automations' evaluator creates them. Answers [kind][on = 0, off = 1] samples.
 */
async function measureConcurrencyCheck(server: RunningServer, samples: number, warmup: number): Promise<number[][][]> {
  const { db } = server.ctx;
  const bus = startedOnBus(server);
  const service = server.services.runs;
  const teamId = (await db.query<{ id: string }>('SELECT id FROM teams ORDER BY created_at LIMIT 1')).rows[0]!.id;
  const capped = newId('fac');
  await db.query(`INSERT INTO factories (id, team_id, name, source, definition) VALUES ($1, $2, $3, '{}', $4)`, [
    capped,
    teamId,
    `bench ${capped}`,
    JSON.stringify({ factory: { maxActiveRuns: 100_000 } }),
  ]);
  const kinds = [
    { factoryId: null, keyed: false },
    { factoryId: capped, keyed: true },
  ];
  const result = kinds.map(() => [[] as number[], [] as number[]]);
  const on = checkOn();
  let n = 0;
  try {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const mode = round % 2;
      await db.exec(mode === 0 ? on : CHECK_OFF);
      const perRound = Math.ceil(samples / ROUNDS);
      for (let i = 0; i < perRound + warmup; i++) {
        for (const [k, kind] of kinds.entries()) {
          const run = await db.transaction(async (tx) => {
            const created = await service.create(
              { teamId, prompt: `check ${n}`, source: 'API', creator: null, factoryId: kind.factoryId },
              { within: tx },
            );
            if (kind.keyed)
              await setRunConcurrency(tx, created.run.id, { key: `acme/api#${n}`, limit: 1, heldMessage: null });
            return created.run;
          });
          n++;
          const t1 = performance.now();
          service.announce([run]);
          const started = await bus.wait(run.id);
          if (i >= warmup) result[k]![mode]!.push(started - t1);
          await pause();
        }
      }
    }
  } finally {
    await db.exec(on);
    bus.stop();
  }
  return result;
}

async function waitAllSucceeded(server: RunningServer, count: number): Promise<void> {
  for (;;) {
    const res = await server.ctx.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE state = 'SUCCEEDED' AND prompt LIKE 'backlog %'`,
    );
    if (res.rows[0]!.n >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function measureThroughput(server: RunningServer): Promise<{ runs: number; seconds: number; rate: number }> {
  const teamId = (await server.ctx.db.query<{ id: string }>('SELECT id FROM teams ORDER BY created_at LIMIT 1'))
    .rows[0]!.id;
  // queue the backlog with the executors paused by a lock on nothing: inserts are visible only at commit
  const started = performance.now();
  for (let done = 0; done < RUNS; done += 500) {
    const rows = [];
    for (let i = done; i < Math.min(RUNS, done + 500); i++)
      rows.push(
        await prepareQueuedRun(server.ctx.db, { teamId, prompt: `backlog ${i}`, source: 'API', creator: null }),
      );
    await insertRuns(server.ctx.db, rows);
    await server.ctx.bus.publish(RUNS_QUEUED_TOPIC, { run_id: null, worker_host: null });
  }
  const queued = performance.now();
  await waitAllSucceeded(server, RUNS);
  const seconds = (performance.now() - started) / 1000;
  console.log(`  (queueing ${RUNS} runs took ${fmt((queued - started) / 1000, 2)} s of the ${fmt(seconds, 2)} s)`);
  return { runs: RUNS, seconds, rate: RUNS / seconds };
}

interface Graphile {
  /** addJob called → handler start, and addJob resolved (the job committed) → handler start, one job at a time. */
  latency(samples: number, warmup: number): Promise<{ added: number[]; committed: number[] }>;
  /** Drain rate of a backlog of RUNS no-op jobs. */
  drain(): Promise<number>;
  stop(): Promise<void>;
}

async function startGraphile(pgUrl: string): Promise<Graphile> {
  const connectionString = await createDatabase(pgUrl, 'bench_graphile');
  let onStart: ((i: number) => void) | undefined;
  let drained = 0;
  let onDrained: (() => void) | undefined;
  // our own pool, with an error handler, ended before PostgreSQL stops
  const pgPool = new pgLib.Pool({ connectionString, max: 20 });
  pgPool.on('error', () => {});
  pgPool.on('connect', (client) => client.on('error', () => {}));
  const runner = await runGraphile({
    pgPool,
    concurrency: Math.min(CONCURRENCY, 64),
    noHandleSignals: true,
    pollInterval: 1_000,
    logger: new (await import('graphile-worker')).Logger(() => () => {}),
    taskList: {
      noop: async (payload) => {
        onStart?.((payload as { i: number }).i);
      },
      drain: async () => {
        drained += 1;
        if (drained === RUNS) onDrained?.();
      },
    },
  });
  const utils = await makeWorkerUtils({ pgPool });
  let next = 0;
  return {
    async latency(samples, warmup) {
      const added: number[] = [];
      const committed: number[] = [];
      for (let k = 0; k < samples + warmup; k++) {
        const i = next++;
        const started = new Promise<number>((resolve) => {
          onStart = (n) => {
            if (n === i) resolve(performance.now());
          };
        });
        const t0 = performance.now();
        await utils.addJob('noop', { i });
        const t1 = performance.now();
        const t2 = await started;
        if (k >= warmup) {
          added.push(t2 - t0);
          committed.push(Math.max(0, t2 - t1));
        }
        await pause();
      }
      return { added, committed };
    },
    async drain() {
      const done = new Promise<void>((resolve) => {
        onDrained = resolve;
      });
      const t0 = performance.now();
      for (let n = 0; n < RUNS; n += 500) {
        await utils.addJobs(
          Array.from({ length: Math.min(500, RUNS - n) }, (_, k) => ({ identifier: 'drain', payload: { i: n + k } })),
        );
      }
      await done;
      return RUNS / ((performance.now() - t0) / 1000);
    },
    async stop() {
      await utils.release();
      await runner.stop();
      await pgPool.end();
    },
  };
}

function latencyRow(name: string, values: number[]): string {
  return `| ${name} | ${values.length} | ${fmt(percentile(values, 50), 2)} | ${fmt(percentile(values, 90), 2)} | ${fmt(percentile(values, 99), 2)} |`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const rows: string[] = [];
const budgetRows: string[] = [];
const throughputRows: string[] = [];
const comparison: string[] = [];
const checkRows: string[] = [];
let pg: Awaited<ReturnType<typeof startPostgresServer>> | undefined;
try {
  if (ENGINES.includes('postgres')) pg = await startPostgresServer();
  for (const engine of ENGINES) {
    console.log(`\n# ${engine}`);
    const databaseUrl = engine === 'postgres' ? await createDatabase(pg!.url, 'bench_agentyard') : undefined;
    const { server, key } = await startBenchServer(engine, databaseUrl);
    const graphile =
      engine === 'postgres' && !values['skip-graphile'] && !values['only-concurrency']
        ? await startGraphile(pg!.url)
        : undefined;
    try {
      const check = await measureConcurrencyCheck(server, SAMPLES, 10);
      for (const [k, name] of CHECK_KINDS.entries()) {
        const [withCheck, without] = [percentile(check[k]![0]!, 50), percentile(check[k]![1]!, 50)];
        checkRows.push(
          `| ${engine} | ${name} | ${check[k]![0]!.length} | ${fmt(withCheck, 2)} | ${fmt(without, 2)} | ${fmt(withCheck / without, 2)} |`,
        );
      }
      console.log(checkRows.slice(-CHECK_KINDS.length).join('\n'));
      if (values['only-concurrency']) continue;
      const latency = emptyLatency();
      const graphileAdded: number[] = [];
      const graphileCommitted: number[] = [];
      /** Per round: [ours, graphile-worker's] p50 of the two like-for-like pairs. */
      const rounds: { enqueue: [number, number]; committed: [number, number] }[] = [];
      const perRound = Math.ceil(SAMPLES / ROUNDS);
      for (let r = 0; r < ROUNDS; r++) {
        const warmup = r === 0 ? 50 : 10;
        const ours = await measureLatency(server, key, perRound, warmup);
        appendLatency(latency, ours);
        if (graphile) {
          const g = await graphile.latency(perRound, warmup);
          graphileAdded.push(...g.added);
          graphileCommitted.push(...g.committed);
          rounds.push({
            enqueue: [median(ours.enqueueToClaimed), median(g.added)],
            committed: [median(ours.committedToClaimed), median(g.committed)],
          });
          console.log(
            `  round ${r + 1}: enqueue → claimed ${fmt(rounds.at(-1)!.enqueue[0], 2)} ms vs addJob → handler start ${fmt(rounds.at(-1)!.enqueue[1], 2)} ms; ` +
              `committed → claimed ${fmt(rounds.at(-1)!.committed[0], 2)} ms vs committed → handler start ${fmt(rounds.at(-1)!.committed[1], 2)} ms`,
          );
        }
      }
      rows.push(
        latencyRow(
          `Agentyard on ${engine}: enqueue (RunService.create called) → claimed, execution begun`,
          latency.enqueueToClaimed,
        ),
      );
      rows.push(latencyRow(`Agentyard on ${engine}: enqueue → INPROGRESS committed`, latency.enqueueToStarted));
      rows.push(
        latencyRow(
          `Agentyard on ${engine}: run committed (create resolved) → claimed, execution begun`,
          latency.committedToClaimed,
        ),
      );
      rows.push(latencyRow(`Agentyard on ${engine}: run committed → INPROGRESS committed`, latency.committedToStarted));
      rows.push(latencyRow(`Agentyard on ${engine}: POST /agent/runs sent → INPROGRESS committed`, latency.post));
      rows.push(latencyRow(`Agentyard on ${engine}: POST sent → INPROGRESS received over SSE (client)`, latency.sse));
      if (graphile) {
        rows.push(latencyRow('graphile-worker 0.18 on postgres: addJob called → handler start', graphileAdded));
        rows.push(
          latencyRow(
            'graphile-worker 0.18 on postgres: job committed (addJob resolved) → handler start',
            graphileCommitted,
          ),
        );
        for (const [name, pick] of [
          [
            'enqueue → the executor has it (RunService.create called → claimed) vs addJob called → handler start',
            (x: (typeof rounds)[number]) => x.enqueue,
          ],
          [
            'committed → the executor has it (create resolved → claimed) vs job committed (addJob resolved) → handler start',
            (x: (typeof rounds)[number]) => x.committed,
          ],
        ] as const) {
          const ours = median(rounds.map((x) => pick(x)[0]));
          const theirs = median(rounds.map((x) => pick(x)[1]));
          const ratio = median(rounds.map((x) => pick(x)[0] / Math.max(pick(x)[1], 0.001)));
          comparison.push(`| ${name} | ${fmt(ours, 2)} | ${fmt(theirs, 2)} | ${fmt(ratio, 2)} |`);
        }
      }
      console.log(rows.slice(graphile ? -8 : -6).join('\n'));
      const budgetRounds = await measureBudgetOverhead(server, ROUNDS, Math.max(20, Math.ceil(SAMPLES / ROUNDS)));
      const ratios = budgetRounds.map((b) => b.budgeted / Math.max(b.plain, 0.001));
      budgetRows.push(
        `| ${engine} | ${fmt(median(budgetRounds.map((b) => b.plain)), 2)} | ${fmt(median(budgetRounds.map((b) => b.budgeted)), 2)} | ${fmt(median(ratios), 2)} (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)}) |`,
      );
      console.log(budgetRows.at(-1));
      const t = await measureThroughput(server);
      throughputRows.push(
        `| Agentyard on ${engine} (noop harness, ${CONCURRENCY} executors) | ${t.runs} | ${fmt(t.seconds, 2)} | ${fmt(t.rate, 0)} |`,
      );
      console.log(throughputRows.at(-1));
      if (graphile) {
        const rate = await graphile.drain();
        throughputRows.push(
          `| graphile-worker 0.18 on postgres (no-op task, concurrency ${Math.min(CONCURRENCY, 64)}) | ${RUNS} | ${fmt(RUNS / rate, 2)} | ${fmt(rate, 0)} |`,
        );
        console.log(throughputRows.at(-1));
      }
    } finally {
      await graphile?.stop();
      await server.stop();
    }
  }
} finally {
  await pg?.stop();
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
}

console.log("\n## The claim's concurrency check: run committed → INPROGRESS p50, ms, with the check and without it\n");
console.log('| Engine | Runs | samples each | p50 with the check | p50 without (baseline) | ratio |');
console.log('|---|---|---:|---:|---:|---:|');
for (const r of checkRows) console.log(r);
if (values['only-concurrency']) process.exit(0);
if (comparison.length) {
  console.log(`\n## Start latency against graphile-worker (median over ${ROUNDS} rounds of each round's p50), ms\n`);
  console.log('| Pair | Agentyard | graphile-worker | ratio (median of rounds) |');
  console.log('|---|---:|---:|---:|');
  for (const c of comparison) console.log(c);
}
console.log('\n## Queue-to-start latency (one run at a time, idle executors), ms\n');
console.log('| Path | samples | p50 | p90 | p99 |');
console.log('|---|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
console.log(
  `\n## The deadline check: enqueue → INPROGRESS committed without budgets and with every per-run budget set (median over ${ROUNDS} rounds of each round's p50), ms\n`,
);
console.log('| Engine | no budget | budgets set | ratio (median of rounds; min–max) |');
console.log('|---|---:|---:|---:|');
for (const r of budgetRows) console.log(r);
console.log('\n## End-to-end throughput (a backlog queued at once, drained to SUCCEEDED)\n');
console.log('| System | runs | seconds | runs/s |');
console.log('|---|---:|---:|---:|');
for (const r of throughputRows) console.log(r);
process.exit(0);
