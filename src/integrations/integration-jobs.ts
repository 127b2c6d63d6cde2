/**
 * The durable queue of outbound provider work (migrations 0067, 0070, 0071): a pull request's changed files
 * for `paths` filters, the `agentyard/factory-config` check run, and the users a Linear text mentions by name.
 * Jobs are enqueued in the outbox evaluation's transaction, so a stored event never loses its job; the runner
 * drains them through the kernel's durable job queue (kernel/job-queue.ts: one claim with a lease, back-off by
 * attempts), and each kind's handler says done, retry or failed.
 */
import type { Bus } from '../kernel/bus.ts';
import { DrainLoop } from '../kernel/drain-loop.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import type { DurableJobQueue, JobStep } from '../kernel/job-queue.ts';
import type { Logger } from '../kernel/log.ts';
import { DELIVERIES_ACCEPTED_TOPIC, INTEGRATION_JOBS_TOPIC } from '../kernel/topics.ts';
import * as sql from './sql.ts';

export type IntegrationJobKind = 'pull_files' | 'factory_check' | 'linear_mentions';

/** A job; `input` is what its kind needs (GithubPullRequestInput for the GitHub kinds). */
export interface IntegrationJob<Input> {
  id: string;
  kind: IntegrationJobKind;
  team_id: string;
  connection_id: string;
  delivery_id: string;
  factory_id: string;
  input: Input;
  attempts: number;
  result: Record<string, unknown>;
}

/** What a GitHub delivery said about the pull request (the input of `pull_files` and `factory_check`). */
export interface GithubPullRequestInput {
  /** `owner/name` as GitHub spells it. */
  repository: string;
  pull_number: number;
  head_sha: string;
  head_ref: string;
  installation_id: number | null;
}

export type JobOutcome =
  | { done: Record<string, unknown> }
  | { retry: string; afterMs?: number }
  | { failed: string; result?: Record<string, unknown> };

/** A Linear delivery's profile names to look up as user ids. */
export interface LinearMentionsInput {
  names: string[];
}

export interface JobHandler<Input> {
  /** `final`: the last attempt; a handler reports what it can (e.g. a failed check) rather than asking to retry. */
  run(
    job: IntegrationJob<Input>,
    tools: { final: boolean; save(result: Record<string, unknown>): Promise<void> },
  ): Promise<JobOutcome>;
  /** Called in the transaction that ends the job (done or failed): e.g. hand the delivery back to the outbox. */
  onEnd?(tx: Queryable, job: IntegrationJob<Input>): Promise<void>;
  /** Called after that transaction committed (e.g. wake the evaluator). */
  afterEnd?(job: IntegrationJob<Input>): Promise<void>;
}

/** The ends of a job its delivery waits on: the delivery goes back to the outbox, and the evaluators are told. */
export function returnsDelivery<Input>(bus: Bus): Required<Pick<JobHandler<Input>, 'onEnd' | 'afterEnd'>> {
  return {
    onEnd: (tx, job) => sql.requeueDelivery(tx, job.delivery_id),
    afterEnd: () => bus.publish(DELIVERIES_ACCEPTED_TOPIC, null),
  };
}

export interface JobHandlers {
  pull_files: JobHandler<GithubPullRequestInput>;
  factory_check: JobHandler<GithubPullRequestInput>;
  linear_mentions: JobHandler<LinearMentionsInput>;
}

export const MAX_JOB_ATTEMPTS = sql.INTEGRATION_JOBS.spec.maxAttempts;

export interface IntegrationJobRunnerOptions {
  db: Db;
  bus: Bus;
  log: Logger;
  handlers: JobHandlers;
  /** A look for due jobs even without a notice (retries, a lost notice, leases of a crashed process). */
  pollIntervalMs?: number;
}

/** Runs due integration jobs one at a time; several processes share them (SKIP LOCKED). */
export class IntegrationJobRunner extends DrainLoop {
  readonly #options: IntegrationJobRunnerOptions;

  constructor(options: IntegrationJobRunnerOptions) {
    super({ bus: options.bus, topic: INTEGRATION_JOBS_TOPIC, pollIntervalMs: options.pollIntervalMs ?? 2_000 });
    this.#options = options;
  }

  /** Runs due jobs until none is left. */
  protected async drain(): Promise<void> {
    const queue: DurableJobQueue<IntegrationJob<unknown>> = sql.INTEGRATION_JOBS;
    const { db, log } = this.#options;
    try {
      await queue.drain(db, (job, { final }) => this.#run(job, final), {
        stopped: () => this.stopped,
        onRetry: (job, err) =>
          log.warn({ job_id: job.id, kind: job.kind, attempt: job.attempts, err }, 'integration job will retry'),
      });
    } catch (err) {
      log.error({ err }, 'running integration jobs failed; retrying at the next poll');
    }
  }

  async #run(job: IntegrationJob<unknown>, final: boolean): Promise<JobStep> {
    const { db, log, handlers } = this.#options;
    // The row's kind says what its input holds.
    const handler = handlers[job.kind] as JobHandler<unknown>;
    const save = async (result: Record<string, unknown>) => {
      job.result = { ...job.result, ...result };
      await sql.saveIntegrationJobResult(db, job.id, JSON.stringify(result));
    };
    let outcome: JobOutcome;
    try {
      outcome = await handler.run(job, { final, save });
    } catch (err) {
      outcome = { retry: err instanceof Error ? err.message : String(err) };
    }
    if ('retry' in outcome && final) outcome = { failed: outcome.retry };
    if ('retry' in outcome) return outcome;
    const ended = outcome;
    await db.transaction(async (tx) => {
      await sql.endIntegrationJob(
        tx,
        job.id,
        'done' in ended ? 'done' : 'failed',
        JSON.stringify('done' in ended ? ended.done : (ended.result ?? {})),
        'failed' in ended ? ended.failed.slice(0, 1000) : null,
      );
      await handler.onEnd?.(tx, job);
    });
    await handler.afterEnd?.(job);
    if ('failed' in ended) log.warn({ job_id: job.id, kind: job.kind, err: ended.failed }, 'integration job failed');
    return 'ended';
  }
}
