/** The SQL of benchmarks (migration 0078). */
import type { Queryable } from '../kernel/db.ts';
import { DurableJobQueue } from '../kernel/job-queue.ts';

export interface BenchmarkRunRow {
  id: string;
  team_id: string;
  factory_id: string;
  suite: string;
  suite_name: string;
  agent: string;
  revision: string | null;
  judge_model: string;
  state: 'running' | 'done';
  created_at: Date;
  finished_at: Date | null;
}

export interface BenchmarkResultRow {
  benchmark_run_id: string;
  task: string;
  position: number;
  title: string;
  run_id: string;
  state: 'pending' | 'judged' | 'unscored';
  attempts: number;
  run_state: string | null;
  passed: boolean | null;
  score: number | null;
  label: string | null;
  reason: string | null;
  duration_ms: number | null;
  usage: Record<string, number>;
  judge_usage: Record<string, number>;
}

export async function insertBenchmarkRun(
  q: Queryable,
  row: Omit<BenchmarkRunRow, 'state' | 'created_at' | 'finished_at'>,
): Promise<BenchmarkRunRow> {
  const res = await q.query<BenchmarkRunRow>(
    `INSERT INTO benchmark_runs (id, team_id, factory_id, suite, suite_name, agent, revision, judge_model)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [row.id, row.team_id, row.factory_id, row.suite, row.suite_name, row.agent, row.revision, row.judge_model],
  );
  return res.rows[0]!;
}

export async function insertBenchmarkResult(
  q: Queryable,
  row: { benchmarkRunId: string; task: string; position: number; title: string; runId: string },
): Promise<void> {
  await q.query(
    `INSERT INTO benchmark_results (benchmark_run_id, task, position, title, run_id) VALUES ($1, $2, $3, $4, $5)`,
    [row.benchmarkRunId, row.task, row.position, row.title, row.runId],
  );
}

/**
 * Benchmark judgements on the kernel's durable job queue: a pending result is due once its run has ended; a claim
 * holds it for a while (a claim lost in a crash is taken again after it), a failed judgement waits 10 s per attempt.
 */
export const BENCHMARK_JUDGEMENTS = new DurableJobQueue<BenchmarkResultRow & { id: string }>({
  table: 'benchmark_results',
  due: `EXISTS (SELECT 1 FROM runs r WHERE r.id = d.run_id AND r.state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'))`,
  leaseSeconds: 300,
  maxAttempts: 4,
  backoffSeconds: [10, 20, 30],
});

/** A claimed result with what its judgement needs: its benchmark, and its run's end. */
export async function resultForJudge(
  q: Queryable,
  id: string,
): Promise<
  | (BenchmarkResultRow & {
      team_id: string;
      factory_id: string;
      suite: string;
      judge_model: string;
      run_state: string;
      run_seconds: number | null;
      request_usage: Record<string, number> | null;
    })
  | undefined
> {
  const res = await q.query<
    BenchmarkResultRow & {
      team_id: string;
      factory_id: string;
      suite: string;
      judge_model: string;
      run_state: string;
      run_seconds: number | null;
      request_usage: Record<string, number> | null;
    }
  >(
    `SELECT c.*, br.team_id, br.factory_id, br.suite, br.judge_model, r.state AS run_state, r.request_usage,
            extract(epoch FROM (r.updated_at - coalesce(r.started_at, r.created_at)))::double precision AS run_seconds
       FROM benchmark_results c JOIN benchmark_runs br ON br.id = c.benchmark_run_id JOIN runs r ON r.id = c.run_id
      WHERE c.id = $1`,
    [id],
  );
  return res.rows[0];
}

export async function recordResult(
  q: Queryable,
  key: { benchmarkRunId: string; task: string },
  r: {
    state: 'judged' | 'unscored';
    runState: string;
    passed: boolean;
    score: number | null;
    label: string | null;
    reason: string;
    durationMs: number | null;
    usage: Record<string, number>;
    judgeUsage: Record<string, number>;
  },
): Promise<void> {
  await q.query(
    `UPDATE benchmark_results SET state = $3, run_state = $4, passed = $5, score = $6, label = $7, reason = $8,
            duration_ms = $9, usage = $10::jsonb, judge_usage = $11::jsonb
      WHERE benchmark_run_id = $1 AND task = $2`,
    [
      key.benchmarkRunId,
      key.task,
      r.state,
      r.runState,
      r.passed,
      r.score,
      r.label,
      r.reason,
      r.durationMs,
      JSON.stringify(r.usage),
      JSON.stringify(r.judgeUsage),
    ],
  );
  await q.query(
    `UPDATE benchmark_runs SET state = 'done', finished_at = ay_now()
      WHERE id = $1 AND state = 'running'
        AND NOT EXISTS (SELECT 1 FROM benchmark_results WHERE benchmark_run_id = $1 AND state = 'pending')`,
    [key.benchmarkRunId],
  );
}

export async function getBenchmarkRun(
  q: Queryable,
  teamId: string,
  factoryId: string,
  id: string,
): Promise<BenchmarkRunRow | undefined> {
  const res = await q.query<BenchmarkRunRow>(
    'SELECT * FROM benchmark_runs WHERE team_id = $1 AND factory_id = $2 AND id = $3',
    [teamId, factoryId, id],
  );
  return res.rows[0];
}

export async function listBenchmarkRuns(
  q: Queryable,
  teamId: string,
  factoryId: string,
  suite: string,
  limit: number,
): Promise<BenchmarkRunRow[]> {
  const res = await q.query<BenchmarkRunRow>(
    `SELECT * FROM benchmark_runs WHERE team_id = $1 AND factory_id = $2 AND suite = $3
      ORDER BY created_at DESC, id DESC LIMIT $4`,
    [teamId, factoryId, suite, limit],
  );
  return res.rows;
}

export async function resultsOf(q: Queryable, ids: readonly string[]): Promise<BenchmarkResultRow[]> {
  if (ids.length === 0) return [];
  const res = await q.query<BenchmarkResultRow>(
    `SELECT benchmark_run_id, task, position, title, run_id, state, attempts, run_state, passed, score, label, reason,
            duration_ms, usage, judge_usage
       FROM benchmark_results WHERE benchmark_run_id = ANY($1) ORDER BY benchmark_run_id, position`,
    [ids],
  );
  return res.rows.map((r) => ({ ...r, duration_ms: r.duration_ms === null ? null : Number(r.duration_ms) }));
}
