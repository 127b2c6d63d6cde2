import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queryable } from '../kernel/db.ts';
import { factoryRunTotals, outboxCount, scoringPendingCount } from './sql.ts';
import type { FactoryRunTotals } from './sql.ts';

/** How long database-derived gauges reuse one answer (scrapes every few seconds cost one query each). */
const DB_GAUGE_TTL_MS = 5_000;

export interface Metrics {
  registry: Registry;
  /** Revisions that went live (`applied`) or were the live one again (`unchanged`), by this process. */
  applies: Counter<'result'>;
  /** Revisions refused (validation, deletion guard, failed apply), by reason. */
  refusals: Counter<'reason'>;
  /** Sources that could not be fetched, by reason. */
  fetchFailures: Counter<'reason'>;
  /** Duration of one reconcile of an operator controller (Factory, Job). */
  reconcileDuration: Histogram<'controller' | 'outcome'>;
  /** Events recorded on Kubernetes objects, by type and reason. */
  kubernetesEvents: Counter<'type' | 'reason'>;
  /** Webhook deliveries this process wrote to the delivery log, by label. */
  webhookDeliveries: Counter<'label'>;
  /** Judgements of runs by scorers, by factory, scorer, status (scored, unscored) and pass (true, false, none). */
  runScores: Counter<'factory_id' | 'scorer' | 'status' | 'passed'>;
  /** Scores given, for the mean per scorer: `agentyard_run_score_sum / agentyard_run_scores_total{status="scored"}`. */
  runScoreSum: Counter<'factory_id' | 'scorer'>;
  /** Tokens the judges used, by direction (input, output). */
  judgeTokens: Counter<'direction'>;
  /** Registers a work queue whose depth `agentyard_workqueue_depth{controller}` reports; returns an unregister function. */
  addQueue(controller: string, depth: () => number): () => void;
}

function cached<T>(load: () => Promise<T>): () => Promise<T> {
  let value: { at: number; data: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!value || now - value.at > DB_GAUGE_TTL_MS) {
      const data = load();
      value = { at: now, data };
      data.catch(() => {
        if (value?.data === data) value = undefined;
      });
    }
    return value.data;
  };
}

/** The run states `agentyard_runs` reports: the live ones, each counted through a partial index of migration 0030. */
const LIVE_RUN_STATES = ['QUEUED', 'CLAIMED', 'INPROGRESS'] as const;

// Each count reads only the rows in that state, through a partial index, never the whole table: a scrape of a
// table of millions of finished runs or delivered webhooks costs what the live work costs (docs/decisions.md,
// "Metrics never scan a table"). QUEUED is counted in two parts, one per partial index (service and worker runs).
const RUN_COUNTS = `SELECT (SELECT count(*) FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL)
                         + (SELECT count(*) FROM runs WHERE state = 'QUEUED' AND worker_host IS NOT NULL) AS "QUEUED",
                           (SELECT count(*) FROM runs WHERE state = 'CLAIMED') AS "CLAIMED",
                           (SELECT count(*) FROM runs WHERE state = 'INPROGRESS') AS "INPROGRESS"`;
/** A registry with the service's metrics; the gauges of live runs and of the delivery outbox query the database when scraped. */
export function createMetrics(db: Queryable): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'agentyard_' });
  const queues = new Map<string, () => number>();

  const runs = cached(
    async () => (await db.query<Record<(typeof LIVE_RUN_STATES)[number], string>>(RUN_COUNTS)).rows[0]!,
  );
  const outbox = cached(() => outboxCount(db));
  const scoring = cached(() => scoringPendingCount(db));

  new Gauge({
    name: 'agentyard_runs',
    help: `Runs in a live state (${LIVE_RUN_STATES.join(', ')}), across every process on the database.`,
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const counts = await runs();
      for (const state of LIVE_RUN_STATES) this.set({ state }, Number(counts[state]));
    },
  });
  new Gauge({
    name: 'agentyard_webhook_outbox_pending',
    help: 'Accepted webhook deliveries waiting for automation evaluation, across every process on the database.',
    registers: [registry],
    async collect() {
      this.set(Number((await outbox()).n));
    },
  });
  new Gauge({
    name: 'agentyard_scoring_jobs_pending',
    help: 'Sampled runs waiting for their scorer, across every process on the database.',
    registers: [registry],
    async collect() {
      this.set(Number((await scoring()).n));
    },
  });
  // Per factory and automation, from the database (every process's runs): the labels are a factory id and an
  // automation name only, so the series are bounded by the live factories × (their automations + 1) × states.
  const totals = cached(() => factoryRunTotals(db));
  const fromTotals = (
    metric: Counter<string>,
    each: (row: FactoryRunTotals, add: (labels: Record<string, string>, value: number) => void) => void,
  ) => {
    return async () => {
      const rows = await totals();
      metric.reset();
      for (const row of rows)
        each(row, (labels, value) => {
          if (Number.isFinite(value) && value > 0) metric.inc(labels, value);
        });
    };
  };
  const factoryRuns: Counter<string> = new Counter({
    name: 'agentyard_factory_runs_total',
    help: 'Run endings of factory runs by factory, automation ("" for none) and state, across every process on the database.',
    labelNames: ['factory_id', 'automation', 'state'],
    registers: [registry],
    collect: () =>
      fromTotals(factoryRuns, (r, add) =>
        add({ factory_id: r.factory_id, automation: r.automation, state: r.state }, Number(r.runs)),
      )(),
  });
  const factoryTokens: Counter<string> = new Counter({
    name: 'agentyard_factory_tokens_total',
    help: "Tokens factory runs' harnesses reported, by factory, automation and direction (input, output).",
    labelNames: ['factory_id', 'automation', 'direction'],
    registers: [registry],
    collect: () =>
      fromTotals(factoryTokens, (r, add) => {
        add({ factory_id: r.factory_id, automation: r.automation, direction: 'input' }, Number(r.input_tokens));
        add({ factory_id: r.factory_id, automation: r.automation, direction: 'output' }, Number(r.output_tokens));
      })(),
  });
  const factoryCost: Counter<string> = new Counter({
    name: 'agentyard_factory_cost_usd_total',
    help: "Cost in USD factory runs' harnesses reported, by factory and automation.",
    labelNames: ['factory_id', 'automation'],
    registers: [registry],
    collect: () =>
      fromTotals(factoryCost, (r, add) =>
        add({ factory_id: r.factory_id, automation: r.automation }, Number(r.cost_usd)),
      )(),
  });
  new Gauge({
    name: 'agentyard_workqueue_depth',
    help: 'Keys waiting in an operator work queue.',
    labelNames: ['controller'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [controller, depth] of queues) this.set({ controller }, depth());
    },
  });

  return {
    registry,
    applies: new Counter({
      name: 'agentyard_factory_applies_total',
      help: 'Factory revisions applied by this process.',
      labelNames: ['result'],
      registers: [registry],
    }),
    refusals: new Counter({
      name: 'agentyard_factory_refusals_total',
      help: 'Factory revisions refused by this process, by reason.',
      labelNames: ['reason'],
      registers: [registry],
    }),
    fetchFailures: new Counter({
      name: 'agentyard_factory_fetch_failures_total',
      help: 'Failed fetches of factory sources by this process, by reason.',
      labelNames: ['reason'],
      registers: [registry],
    }),
    reconcileDuration: new Histogram({
      name: 'agentyard_reconcile_duration_seconds',
      help: 'Duration of one reconcile of an operator controller.',
      labelNames: ['controller', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    kubernetesEvents: new Counter({
      name: 'agentyard_kubernetes_events_total',
      help: 'Events recorded on Kubernetes objects, by type and reason.',
      labelNames: ['type', 'reason'],
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'agentyard_webhook_deliveries_total',
      help: 'Webhook deliveries written to the delivery log by this process, by label (accepted, duplicate, rejected_*).',
      labelNames: ['label'],
      registers: [registry],
    }),
    runScores: new Counter({
      name: 'agentyard_run_scores_total',
      help: 'Runs judged by scorers in this process, by factory, scorer, status and pass.',
      labelNames: ['factory_id', 'scorer', 'status', 'passed'],
      registers: [registry],
    }),
    runScoreSum: new Counter({
      name: 'agentyard_run_score_sum',
      help: 'Sum of the scores given by scorers in this process (mean = sum / scored count).',
      labelNames: ['factory_id', 'scorer'],
      registers: [registry],
    }),
    judgeTokens: new Counter({
      name: 'agentyard_judge_tokens_total',
      help: 'Tokens the scorer judges used in this process, by direction.',
      labelNames: ['direction'],
      registers: [registry],
    }),
    addQueue(controller, depth) {
      queues.set(controller, depth);
      return () => {
        if (queues.get(controller) === depth) queues.delete(controller);
      };
    },
  };
}
