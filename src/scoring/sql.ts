/** The SQL of scoring (migration 0077): cursors, the job queue, scores, and the reads they need. */
import { DurableJobQueue } from '../kernel/job-queue.ts';
import type { Queryable } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import type { FactoryDefinition, ScorerDefinition } from '../definitions/model.ts';

export interface ScoredFactory {
  id: string;
  team_id: string;
  foreman: string | null;
  scorers: ScorerDefinition[];
  scanned_to: Date | null;
  applied_at: Date | null;
}

/** Factories whose applied definition has scorers, with their scan cursors. */
export async function factoriesWithScorers(q: Queryable): Promise<ScoredFactory[]> {
  const res = await q.query<ScoredFactory>(
    `SELECT f.id, f.team_id, f.definition->>'foreman' AS foreman, f.definition->'scorers' AS scorers,
            c.scanned_to, f.applied_at
       FROM factories f LEFT JOIN scoring_cursors c ON c.factory_id = f.id
      WHERE f.deleted_at IS NULL AND f.definition IS NOT NULL
        AND jsonb_array_length(coalesce(f.definition->'scorers', '[]'::jsonb)) > 0`,
  );
  return res.rows;
}

export interface FinishedRun {
  id: string;
  agent: string | null;
  updated_at: Date;
}

/** Runs of a factory that finished (SUCCEEDED or FAILED) in (from, to], oldest first. */
export async function finishedRuns(
  q: Queryable,
  factoryId: string,
  from: Date,
  to: Date,
  limit: number,
): Promise<FinishedRun[]> {
  const res = await q.query<FinishedRun>(
    `SELECT id, config_name AS agent, updated_at FROM runs
      WHERE factory_id = $1 AND updated_at > $2 AND updated_at <= $3 AND state IN ('SUCCEEDED', 'FAILED')
      ORDER BY updated_at, id LIMIT $4`,
    [factoryId, from, to, limit],
  );
  return res.rows;
}

export async function now(q: Queryable): Promise<Date> {
  return (await q.query<{ now: Date }>('SELECT ay_now() AS now')).rows[0]!.now;
}

export async function setCursor(q: Queryable, factoryId: string, to: Date): Promise<void> {
  await q.query(
    `INSERT INTO scoring_cursors (factory_id, scanned_to) VALUES ($1, $2)
     ON CONFLICT (factory_id) DO UPDATE SET scanned_to = GREATEST(scoring_cursors.scanned_to, EXCLUDED.scanned_to)`,
    [factoryId, to],
  );
}

export interface NewScoringJob {
  teamId: string;
  factoryId: string;
  runId: string;
  scorer: string;
  agent: string;
}

/** Queues jobs; a (run, scorer) already queued keeps its job. Answers how many were new. */
export async function insertJobs(q: Queryable, jobs: readonly NewScoringJob[]): Promise<number> {
  if (jobs.length === 0) return 0;
  const values: unknown[] = [];
  const rows = jobs.map((j, i) => {
    values.push(newId('scj'), j.teamId, j.factoryId, j.runId, j.scorer, j.agent);
    const b = i * 6;
    return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6})`;
  });
  const res = await q.query(
    `INSERT INTO scoring_jobs (id, team_id, factory_id, run_id, scorer, agent) VALUES ${rows.join(', ')}
     ON CONFLICT (run_id, scorer) DO NOTHING`,
    values as never[],
  );
  return res.rowCount ?? 0;
}

export interface ScoringJob {
  id: string;
  team_id: string;
  factory_id: string;
  run_id: string;
  scorer: string;
  agent: string;
  attempts: number;
}

/** Scorer jobs on the kernel's durable job queue (one claim with a lease, back-off by attempts). */
export const SCORING_JOBS = new DurableJobQueue<ScoringJob>({
  table: 'scoring_jobs',
  leaseSeconds: 300,
  maxAttempts: 4,
  backoffSeconds: [10, 60, 300],
});

export async function endJob(q: Queryable, id: string, state: 'done' | 'failed', error: string | null): Promise<void> {
  await q.query(`UPDATE scoring_jobs SET state = $2, error = $3, finished_at = ay_now() WHERE id = $1`, [
    id,
    state,
    error,
  ]);
}

export async function pendingJobs(q: Queryable): Promise<number> {
  const res = await q.query<{ n: string }>(`SELECT count(*) AS n FROM scoring_jobs WHERE state = 'pending'`);
  return Number(res.rows[0]!.n);
}

export interface RunScoreRow {
  run_id: string;
  scorer: string;
  team_id: string;
  factory_id: string;
  agent: string;
  status: 'scored' | 'unscored';
  label: string | null;
  score: number | null;
  passed: boolean | null;
  reason: string;
  judge_model: string;
  usage: Record<string, number>;
  created_at: Date;
}

export async function insertScore(q: Queryable, s: Omit<RunScoreRow, 'created_at'>): Promise<void> {
  await q.query(
    `INSERT INTO run_scores (run_id, scorer, team_id, factory_id, agent, status, label, score, passed, reason,
                             judge_model, usage)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb)
     ON CONFLICT (run_id, scorer) DO NOTHING`,
    [
      s.run_id,
      s.scorer,
      s.team_id,
      s.factory_id,
      s.agent,
      s.status,
      s.label,
      s.score,
      s.passed,
      s.reason,
      s.judge_model,
      JSON.stringify(s.usage),
    ],
  );
}

export async function scoresOfRun(q: Queryable, teamId: string, runId: string): Promise<RunScoreRow[]> {
  const res = await q.query<RunScoreRow>(
    `SELECT * FROM run_scores WHERE team_id = $1 AND run_id = $2 ORDER BY scorer`,
    [teamId, runId],
  );
  return res.rows;
}

export async function runExists(q: Queryable, teamId: string, runId: string): Promise<boolean> {
  const res = await q.query('SELECT 1 FROM runs WHERE team_id = $1 AND id = $2', [teamId, runId]);
  return res.rows.length > 0;
}

export interface ScoreDay {
  day: string;
  factory_id: string;
  agent: string;
  scorer: string;
  samples: number;
  scored: number;
  passed: number;
  mean_score: number | null;
}

/** Scores of a team per UTC day, factory, agent and scorer, since a time. */
export async function scoreDays(
  q: Queryable,
  teamId: string,
  filter: { agent?: string | undefined; scorer?: string | undefined; factoryId?: string | undefined; since: Date },
): Promise<ScoreDay[]> {
  const res = await q.query<ScoreDay & { samples: string; scored: string; passed: string }>(
    `SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, factory_id, agent, scorer,
            count(*) AS samples, count(*) FILTER (WHERE status = 'scored') AS scored,
            count(*) FILTER (WHERE passed) AS passed, avg(score) AS mean_score
       FROM run_scores
      WHERE team_id = $1 AND created_at >= $2
        AND ($3::text IS NULL OR agent = $3) AND ($4::text IS NULL OR scorer = $4)
        AND ($5::text IS NULL OR factory_id = $5)
      GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    [teamId, filter.since, filter.agent ?? null, filter.scorer ?? null, filter.factoryId ?? null],
  );
  return res.rows.map((r) => ({
    ...r,
    samples: Number(r.samples),
    scored: Number(r.scored),
    passed: Number(r.passed),
    mean_score: r.mean_score === null ? null : Number(r.mean_score),
  }));
}

/** The latest scored samples of a scorer taken after its last improvement run, newest first. */
export async function samplesSinceImprovement(
  q: Queryable,
  factoryId: string,
  scorer: string,
  limit: number,
): Promise<Pick<RunScoreRow, 'run_id' | 'label' | 'score' | 'passed' | 'reason'>[]> {
  const res = await q.query<Pick<RunScoreRow, 'run_id' | 'label' | 'score' | 'passed' | 'reason'>>(
    `SELECT run_id, label, score, passed, reason FROM run_scores s
      WHERE factory_id = $1 AND scorer = $2 AND status = 'scored'
        AND created_at > coalesce((SELECT max(created_at) FROM scorer_improvement_runs
                                    WHERE factory_id = $1 AND scorer = $2), '-infinity')
      ORDER BY created_at DESC LIMIT $3`,
    [factoryId, scorer, limit],
  );
  return res.rows;
}

export async function recordImprovementRun(q: Queryable, factoryId: string, scorer: string, runId: string) {
  await q.query(`INSERT INTO scorer_improvement_runs (factory_id, scorer, run_id) VALUES ($1, $2, $3)`, [
    factoryId,
    scorer,
    runId,
  ]);
}

export interface RunMaterialRow {
  id: string;
  team_id: string;
  prompt: string;
  state: string;
  status_message: { message?: string } | null;
  artifacts: unknown[];
}

export async function runForJudge(q: Queryable, runId: string): Promise<RunMaterialRow | undefined> {
  const res = await q.query<RunMaterialRow>(
    'SELECT id, team_id, prompt, state, status_message, artifacts FROM runs WHERE id = $1',
    [runId],
  );
  return res.rows[0];
}

export async function transcriptEvents(
  q: Queryable,
  runId: string,
  limit: number,
): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const res = await q.query<{ type: string; data: Record<string, unknown> }>(
    `SELECT type, data FROM (
        SELECT sequence, type, data FROM run_events
         WHERE run_id = $1 AND type IN ('message', 'tool_call', 'tool_result', 'result', 'followup', 'error')
         ORDER BY sequence DESC LIMIT $2) last
      ORDER BY sequence`,
    [runId, limit],
  );
  return res.rows;
}

/** A factory's applied definition. */
export async function definitionOf(q: Queryable, factoryId: string): Promise<FactoryDefinition | undefined> {
  const res = await q.query<{ definition: FactoryDefinition | null }>(
    'SELECT definition FROM factories WHERE id = $1 AND deleted_at IS NULL',
    [factoryId],
  );
  return res.rows[0]?.definition ?? undefined;
}

/** A team's factory with its applied definition and revision. */
export async function definitionOfTeam(
  q: Queryable,
  teamId: string,
  factoryId: string,
): Promise<{ definition: FactoryDefinition | null; applied_revision: string | null } | undefined> {
  const res = await q.query<{ definition: FactoryDefinition | null; applied_revision: string | null }>(
    'SELECT definition, applied_revision FROM factories WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL',
    [teamId, factoryId],
  );
  return res.rows[0];
}
