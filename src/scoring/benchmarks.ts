/**
 * Benchmarks: `benchmarks/<suite>/` of a factory's applied definition run as one run of the suite's agent per
 * task (its prompt, with the task's starting repository revisions checked out in its workspace), and a judge scores each finished
 * run against the task's success criteria (pass or fail). A benchmark run is kept with the factory's applied
 * revision, so runs of two revisions of the agent compare side by side.
 */
import type { JobStep } from '../kernel/job-queue.ts';
import type { Db } from '../kernel/db.ts';
import { AppError } from '../kernel/errors.ts';
import { newId } from '../kernel/ids.ts';
import type { Logger } from '../kernel/log.ts';
import type { BenchmarkSuiteDefinition } from '../definitions/model.ts';
import { STARTING_REPO_REFS_KEY } from '../execution/repo-checkout.ts';
import { runConfigFor } from '../factories/apply/run-config.ts';
import type { Creator } from '../engine/model.ts';
import type { RunService } from '../runs/service.ts';
import * as bsql from './benchmark-sql.ts';
import { JudgeUnavailable } from './judge.ts';
import type { Judge, JudgeLabel } from './judge.ts';
import { runMaterial } from './material.ts';
import * as sql from './sql.ts';

const PASS_FAIL: readonly JudgeLabel[] = [
  { value: 'pass', score: 1, description: 'the run meets every success criterion' },
  { value: 'fail', score: 0, description: 'the run misses a success criterion' },
];

export interface BenchmarkTaskView {
  task: string;
  title: string;
  run_id: string;
  state: 'pending' | 'judged' | 'unscored';
  run_state: string | null;
  passed: boolean | null;
  score: number | null;
  reason: string | null;
  duration_ms: number | null;
  usage: Record<string, number>;
}

export interface BenchmarkRunView {
  id: string;
  factory_id: string;
  suite: string;
  suite_name: string;
  agent: string;
  revision: string | null;
  judge_model: string;
  state: 'running' | 'done';
  created_at: string;
  finished_at: string | null;
  passed: number;
  tasks: BenchmarkTaskView[];
}

export function benchmarkView(
  run: bsql.BenchmarkRunRow,
  results: readonly bsql.BenchmarkResultRow[],
): BenchmarkRunView {
  const tasks = results
    .filter((r) => r.benchmark_run_id === run.id)
    .map((r) => ({
      task: r.task,
      title: r.title,
      run_id: r.run_id,
      state: r.state,
      run_state: r.run_state,
      passed: r.passed,
      score: r.score,
      reason: r.reason,
      duration_ms: r.duration_ms,
      usage: r.usage,
    }));
  return {
    id: run.id,
    factory_id: run.factory_id,
    suite: run.suite,
    suite_name: run.suite_name,
    agent: run.agent,
    revision: run.revision,
    judge_model: run.judge_model,
    state: run.state,
    created_at: run.created_at.toISOString(),
    finished_at: run.finished_at?.toISOString() ?? null,
    passed: tasks.filter((t) => t.passed).length,
    tasks,
  };
}

/** A task's prompt: the task, and where the repository revisions it starts from are checked out. */
export function taskPrompt(task: BenchmarkSuiteDefinition['tasks'][number]): string {
  if (task.startingRepoRefs.length === 0) return task.prompt;
  return `${task.prompt}\n\n---\nThese repository revisions are checked out in the working directory, each in a directory named after the repository:\n${task.startingRepoRefs.map((r) => `- ${r}`).join('\n')}\n`;
}

export class BenchmarkService {
  readonly #db: Db;
  readonly #runs: RunService;
  readonly #judge: Judge;
  readonly #log: Logger;
  readonly #defaultJudgeModel: string;

  constructor(deps: { db: Db; runs: RunService; judge: Judge; log: Logger; defaultJudgeModel: string | undefined }) {
    this.#db = deps.db;
    this.#runs = deps.runs;
    this.#judge = deps.judge;
    this.#log = deps.log;
    this.#defaultJudgeModel = deps.defaultJudgeModel ?? 'auto';
  }

  /** Starts a run of every task of the suite; answers the benchmark run. */
  async start(input: {
    teamId: string;
    factoryId: string;
    suite: string;
    creator: Creator | null;
    judgeModel?: string | undefined;
  }): Promise<BenchmarkRunView> {
    const factory = await sql.definitionOfTeam(this.#db, input.teamId, input.factoryId);
    if (!factory) throw new AppError('resource_not_found', `factory ${input.factoryId} does not exist`);
    if (!this.#judge.configured)
      throw new AppError('conflict', 'benchmarks need a judge endpoint: set AGENTYARD_OPENAI_BASE_URL on the server');
    if (!factory.definition) throw new AppError('conflict', `factory ${input.factoryId} has no applied definition yet`);
    const definition = factory.definition;
    const suite = definition.benchmarks.find((b) => b.slug === input.suite);
    if (!suite)
      throw new AppError(
        'resource_not_found',
        `factory ${input.factoryId} has no benchmark suite "${input.suite}" (benchmarks/${input.suite}/suite.yaml)`,
      );
    const agent = definition.agents.find((a) => a.name === suite.agent);
    if (!agent) throw new AppError('conflict', `the suite's agent "${suite.agent}" is not in the applied definition`);
    const judgeModel = input.judgeModel ?? this.#defaultJudgeModel;
    const created = await this.#db.transaction(async (tx) => {
      const run = await bsql.insertBenchmarkRun(tx, {
        id: newId('bch'),
        team_id: input.teamId,
        factory_id: input.factoryId,
        suite: suite.slug,
        suite_name: suite.name,
        agent: suite.agent,
        revision: factory.applied_revision,
        judge_model: judgeModel,
      });
      const runs = [];
      for (const [position, task] of suite.tasks.entries()) {
        const config = runConfigFor(agent.execution, agent.name);
        if (agent.prompt) config.base_prompt = agent.prompt;
        const { run: taskRun } = await this.#runs.create(
          {
            teamId: input.teamId,
            title: `Benchmark ${suite.name}: ${task.title}`.slice(0, 120),
            prompt: taskPrompt(task),
            config,
            source: 'FACTORY',
            factoryId: input.factoryId,
            creator: input.creator,
            metadata: {
              agentyard_benchmark: suite.slug,
              agentyard_benchmark_task: task.slug,
              agentyard_benchmark_run: run.id,
              ...(task.startingRepoRefs.length > 0
                ? { [STARTING_REPO_REFS_KEY]: task.startingRepoRefs.join('\n') }
                : {}),
            },
          },
          { within: tx },
        );
        runs.push(taskRun);
        await bsql.insertBenchmarkResult(tx, {
          benchmarkRunId: run.id,
          task: task.slug,
          position,
          title: task.title,
          runId: taskRun.id,
        });
      }
      return { run, runs };
    });
    this.#runs.announce(created.runs);
    return this.get(input.teamId, input.factoryId, created.run.id);
  }

  async get(teamId: string, factoryId: string, id: string): Promise<BenchmarkRunView> {
    const run = await bsql.getBenchmarkRun(this.#db, teamId, factoryId, id);
    if (!run) throw new AppError('resource_not_found', `benchmark run ${id} does not exist`);
    return benchmarkView(run, await bsql.resultsOf(this.#db, [run.id]));
  }

  async list(teamId: string, factoryId: string, suite: string, limit: number): Promise<BenchmarkRunView[]> {
    if (!(await sql.definitionOfTeam(this.#db, teamId, factoryId)))
      throw new AppError('resource_not_found', `factory ${factoryId} does not exist`);
    const runs = await bsql.listBenchmarkRuns(this.#db, teamId, factoryId, suite, limit);
    const results = await bsql.resultsOf(
      this.#db,
      runs.map((r) => r.id),
    );
    return runs.map((r) => benchmarkView(r, results));
  }

  /** Judges the tasks whose runs have ended, one at a time, until none is left. */
  async judgeFinished(stopped: () => boolean): Promise<void> {
    await bsql.BENCHMARK_JUDGEMENTS.drain(
      this.#db,
      async (claimed, { final }) => {
        const result = await bsql.resultForJudge(this.#db, claimed.id);
        if (!result) return 'ended';
        return this.#judgeOne(result, final);
      },
      { stopped },
    );
  }

  async #judgeOne(
    result: NonNullable<Awaited<ReturnType<typeof bsql.resultForJudge>>>,
    final: boolean,
  ): Promise<JobStep> {
    const key = { benchmarkRunId: result.benchmark_run_id, task: result.task };
    const usage = result.request_usage ?? {};
    const durationMs = result.run_seconds === null ? null : Math.round(result.run_seconds * 1000);
    const definition = (await sql.definitionOf(this.#db, result.factory_id))?.benchmarks.find(
      (b) => b.slug === result.suite,
    );
    const task = definition?.tasks.find((t) => t.slug === result.task);
    const run = await sql.runForJudge(this.#db, result.run_id);
    if (!task || !run || (result.run_state !== 'SUCCEEDED' && result.run_state !== 'FAILED')) {
      const reason = !task
        ? 'the task is no longer in the applied definition'
        : `the run ended ${result.run_state}${run?.status_message?.message ? `: ${run.status_message.message}` : ''}`;
      await bsql.recordResult(this.#db, key, {
        state: 'unscored',
        runState: result.run_state,
        passed: false,
        score: null,
        label: null,
        reason,
        durationMs,
        usage,
        judgeUsage: {},
      });
      return 'ended';
    }
    try {
      const judgement = await this.#judge.judge({
        model: result.judge_model,
        rubric: `Success criteria of the benchmark task "${task.title}":\n\n${task.successCriteria}`,
        labels: PASS_FAIL,
        material: runMaterial(run, await sql.transcriptEvents(this.#db, run.id, 2000)),
      });
      await bsql.recordResult(this.#db, key, {
        state: judgement.status === 'scored' ? 'judged' : 'unscored',
        runState: result.run_state,
        passed: judgement.status === 'scored' && judgement.score >= 1,
        score: judgement.status === 'scored' ? judgement.score : null,
        label: judgement.status === 'scored' ? judgement.label : null,
        reason: judgement.reason,
        durationMs,
        usage,
        judgeUsage: { ...judgement.usage },
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!(err instanceof JudgeUnavailable)) this.#log.error({ err }, 'judging a benchmark task failed');
      if (!final) return { retry: message };
      await bsql.recordResult(this.#db, key, {
        state: 'unscored',
        runState: result.run_state,
        passed: false,
        score: null,
        label: null,
        reason: `no judgement after ${result.attempts} attempts: ${message}`.slice(0, 2000),
        durationMs,
        usage,
        judgeUsage: {},
      });
    }
    return 'ended';
  }
}

/** The results as a text table: task, passed, score, duration, usage. */
export function benchmarkTable(view: BenchmarkRunView): string {
  const rows = view.tasks.map((t) => [
    t.task,
    t.state === 'pending' ? '…' : t.passed ? 'yes' : 'no',
    t.score === null ? '-' : String(t.score),
    t.duration_ms === null ? '-' : `${(t.duration_ms / 1000).toFixed(1)}s`,
    `${t.usage.input_tokens ?? 0} in / ${t.usage.output_tokens ?? 0} out`,
  ]);
  const header = ['task', 'passed', 'score', 'duration', 'usage'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(header),
    ...rows.map(line),
    '',
    `${view.passed}/${view.tasks.length} passed · suite ${view.suite} · agent ${view.agent} · revision ${view.revision ?? '-'}`,
  ].join('\n');
}
