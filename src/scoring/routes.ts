/**
 * /api/v1/agent/runs/{id}/scores (a run's judgements) and /api/v1/agent/scores (counts, pass rate and mean
 * score per day, agent and scorer). Team-scoped like every run read.
 */
import { Type } from 'typebox';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import type { AppInstance } from '../plugin.ts';
import type { BenchmarkService } from './benchmarks.ts';
import * as sql from './sql.ts';

const TAGS = ['scores'];
const DAY_MS = 86_400_000;
/** The longest span one statistics request covers. */
const MAX_DAYS = 366;

const ScoreSchema = Type.Object({
  scorer: Type.String(),
  label: Type.Union([Type.String(), Type.Null()]),
  score: Type.Union([Type.Number(), Type.Null()]),
  passed: Type.Union([Type.Boolean(), Type.Null()]),
  reason: Type.String(),
  status: Type.Union([Type.Literal('scored'), Type.Literal('unscored')]),
  agent: Type.String(),
  judge_model: Type.String(),
  usage: Type.Record(Type.String(), Type.Number()),
  created_at: Type.String({ format: 'date-time' }),
});

const DaySchema = Type.Object({
  day: Type.String({ description: 'UTC day, YYYY-MM-DD' }),
  factory_id: Type.String(),
  agent: Type.String(),
  scorer: Type.String(),
  samples: Type.Integer({ description: 'Judgements, unscored ones included' }),
  scored: Type.Integer(),
  passed: Type.Integer(),
  pass_rate: Type.Union([Type.Number(), Type.Null()], { description: 'passed / scored; null with none scored' }),
  mean_score: Type.Union([Type.Number(), Type.Null()]),
});

export function scoreView(row: sql.RunScoreRow) {
  return {
    scorer: row.scorer,
    label: row.label,
    score: row.score,
    passed: row.passed,
    reason: row.reason,
    status: row.status,
    agent: row.agent,
    judge_model: row.judge_model,
    usage: row.usage,
    created_at: row.created_at.toISOString(),
  };
}

/** `since` as a time: an ISO date or date-time; default 30 days ago; at most a year back. */
export function parseSince(raw: string | undefined, now: Date): Date {
  if (raw === undefined || raw === '') return new Date(now.getTime() - 30 * DAY_MS);
  const t = Date.parse(raw);
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(t))
    throw new AppError('invalid_request', `since must be an ISO 8601 date or date-time, got "${raw.slice(0, 60)}"`);
  if (now.getTime() - t > MAX_DAYS * DAY_MS)
    throw new AppError('invalid_request', `since may be at most ${MAX_DAYS} days back`);
  return new Date(t);
}

const BenchmarkTaskSchema = Type.Object({
  task: Type.String(),
  title: Type.String(),
  run_id: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('judged'), Type.Literal('unscored')]),
  run_state: Type.Union([Type.String(), Type.Null()]),
  passed: Type.Union([Type.Boolean(), Type.Null()]),
  score: Type.Union([Type.Number(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Union([Type.Number(), Type.Null()]),
  usage: Type.Record(Type.String(), Type.Number()),
});

const BenchmarkRunSchema = Type.Object({
  id: Type.String(),
  factory_id: Type.String(),
  suite: Type.String(),
  suite_name: Type.String(),
  agent: Type.String(),
  revision: Type.Union([Type.String(), Type.Null()], {
    description: "The factory's applied revision the runs started from",
  }),
  judge_model: Type.String(),
  state: Type.Union([Type.Literal('running'), Type.Literal('done')]),
  created_at: Type.String({ format: 'date-time' }),
  finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  passed: Type.Integer(),
  tasks: Type.Array(BenchmarkTaskSchema),
});

const SuiteParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  suite: Type.String({ minLength: 1, maxLength: 200 }),
});

export async function registerScoringRoutes(
  app: AppInstance,
  ctx: ServiceContext,
  benchmarks: BenchmarkService,
): Promise<void> {
  app.post(
    '/factories/:id/benchmarks/:suite/runs',
    {
      schema: {
        tags: ['benchmarks'],
        operationId: 'runBenchmark',
        summary: "Run every task of a benchmark suite as a run of the suite's agent; each is judged when it ends",
        params: SuiteParams,
        body: Type.Optional(
          Type.Object(
            {
              judge_model: Type.Optional(
                Type.String({ minLength: 1, maxLength: 200, description: 'Default: the instance model' }),
              ),
            },
            { additionalProperties: false },
          ),
        ),
        response: { 200: BenchmarkRunSchema },
      },
    },
    async (request) => {
      const p = request.principal;
      return benchmarks.start({
        teamId: p.teamId,
        factoryId: request.params.id,
        suite: request.params.suite,
        judgeModel: request.body?.judge_model,
        creator: {
          id: p.subject.id,
          type: p.subject.type,
          displayName: p.subject.displayName,
          email: p.subject.email,
        },
      });
    },
  );

  app.get(
    '/factories/:id/benchmarks/:suite/runs',
    {
      schema: {
        tags: ['benchmarks'],
        operationId: 'listBenchmarkRuns',
        summary: 'Benchmark runs of a suite, newest first, with their task results (to compare revisions)',
        params: SuiteParams,
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })) }),
        response: { 200: Type.Object({ runs: Type.Array(BenchmarkRunSchema) }) },
      },
    },
    async (request) => ({
      runs: await benchmarks.list(
        request.principal.teamId,
        request.params.id,
        request.params.suite,
        request.query.limit ?? 10,
      ),
    }),
  );

  app.get(
    '/factories/:id/benchmark-runs/:runId',
    {
      schema: {
        tags: ['benchmarks'],
        operationId: 'getBenchmarkRun',
        summary: 'A benchmark run and its task results',
        params: Type.Object({
          id: Type.String({ minLength: 1, maxLength: 100 }),
          runId: Type.String({ minLength: 1, maxLength: 100 }),
        }),
        response: { 200: BenchmarkRunSchema },
      },
    },
    async (request) => benchmarks.get(request.principal.teamId, request.params.id, request.params.runId),
  );

  app.get(
    '/agent/runs/:runId/scores',
    {
      schema: {
        tags: TAGS,
        operationId: 'getRunScores',
        summary: "A run's judgements by the factory's scorers (empty until a scoring job has ended)",
        params: Type.Object({ runId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: Type.Object({ scores: Type.Array(ScoreSchema) }) },
      },
    },
    async (request) => {
      const { teamId } = request.principal;
      const rows = await sql.scoresOfRun(ctx.db, teamId, request.params.runId);
      if (rows.length === 0 && !(await sql.runExists(ctx.db, teamId, request.params.runId)))
        throw new AppError('resource_not_found', `run ${request.params.runId} does not exist`);
      return { scores: rows.map(scoreView) };
    },
  );

  app.get(
    '/agent/scores',
    {
      schema: {
        tags: TAGS,
        operationId: 'listScoreStatistics',
        summary: 'Scores per UTC day, factory, agent and scorer: samples, pass rate, mean score',
        querystring: Type.Object({
          agent: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          scorer: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          factory_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          since: Type.Optional(
            Type.String({ maxLength: 40, description: 'ISO date or date-time; default 30 days ago' }),
          ),
        }),
        response: {
          200: Type.Object({
            since: Type.String({ format: 'date-time' }),
            days: Type.Array(DaySchema),
            totals: Type.Array(Type.Omit(DaySchema, ['day'])),
          }),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const since = parseSince(q.since, new Date());
      const days = await sql.scoreDays(ctx.db, request.principal.teamId, {
        agent: q.agent,
        scorer: q.scorer,
        factoryId: q.factory_id,
        since,
      });
      const rate = (passed: number, scored: number) => (scored ? passed / scored : null);
      const totals = new Map<string, Omit<sql.ScoreDay, 'day'> & { weighted: number }>();
      for (const d of days) {
        const key = `${d.factory_id}\0${d.agent}\0${d.scorer}`;
        const t = totals.get(key) ?? {
          factory_id: d.factory_id,
          agent: d.agent,
          scorer: d.scorer,
          samples: 0,
          scored: 0,
          passed: 0,
          mean_score: null,
          weighted: 0,
        };
        t.samples += d.samples;
        t.scored += d.scored;
        t.passed += d.passed;
        t.weighted += (d.mean_score ?? 0) * d.scored;
        totals.set(key, t);
      }
      return {
        since: since.toISOString(),
        days: days.map((d) => ({ ...d, pass_rate: rate(d.passed, d.scored) })),
        totals: [...totals.values()].map(({ weighted, ...t }) => ({
          ...t,
          pass_rate: rate(t.passed, t.scored),
          mean_score: t.scored ? weighted / t.scored : null,
        })),
      };
    },
  );
}
