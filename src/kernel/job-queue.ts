/**
 * The durable job queue: work a process must do once and may retry (the integrations' provider calls, scorer
 * judgements, benchmark judgements), kept in its owner's table so that it commits with the writes that make
 * it. A queue table has `id`, `state` (`pending` while it is to be done), `attempts`, `run_after` (when it is
 * due; a claim moves it past the claim's lease, so a claim lost in a crash is taken again once the lease ends)
 * and `error`. Every queue is claimed by the one statement here (`FOR UPDATE SKIP LOCKED`: several processes
 * share a queue, each job goes to one) and drained by the one loop here: a job is handled, or deferred with
 * back-off by its attempts; its handler ends it in its owner's terms (done, failed, judged...).
 * docs/architecture.md, "One way to run background work".
 */
import type { Queryable } from './db.ts';

export interface JobQueueSpec {
  /** The table of the queue (owned by the domain that declares the spec). */
  table: string;
  /** A further condition for a pending job to be due, on its row `d` (SQL, e.g. its run has ended). */
  due?: string;
  /** How long a claim holds a job; a handler that has not ended it by then is presumed dead. */
  leaseSeconds: number;
  /** The attempt from which a handler is told it is the last (`final`). */
  maxAttempts: number;
  /** Pauses before the 2nd, 3rd… attempt (the last one repeats). */
  backoffSeconds: readonly number[];
}

/** What a claim answers: the job's row, `attempts` counting this one. */
export interface QueuedJob {
  id: string;
  attempts: number;
}

/** What a handler did with a job: ended it (in its owner's terms), or asks for another attempt later. */
export type JobStep = 'ended' | { retry: string; afterMs?: number };

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

export class DurableJobQueue<J extends QueuedJob> {
  readonly spec: JobQueueSpec;
  readonly #claim: string;
  readonly #defer: string;

  constructor(spec: JobQueueSpec) {
    if (!IDENTIFIER.test(spec.table)) throw new Error(`not a table name: ${spec.table}`);
    this.spec = spec;
    this.#claim = `UPDATE ${spec.table} j SET attempts = j.attempts + 1, run_after = ay_now() + make_interval(secs => $1)
      WHERE j.id = (SELECT d.id FROM ${spec.table} d WHERE d.state = 'pending' AND d.run_after <= ay_now()${spec.due ? ` AND (${spec.due})` : ''}
                     ORDER BY d.run_after LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING j.*`;
    this.#defer = `UPDATE ${spec.table} SET run_after = ay_now() + make_interval(secs => $2), error = $3 WHERE id = $1`;
  }

  /** Claims the due job waiting longest, for the lease; undefined when none is due. */
  async claim(q: Queryable): Promise<J | undefined> {
    const res = await q.query<J>(this.#claim, [this.spec.leaseSeconds]);
    const job = res.rows[0];
    return job ? { ...job, attempts: Number(job.attempts) } : undefined;
  }

  /** Puts a job off for `seconds`, recording why. */
  async defer(q: Queryable, id: string, seconds: number, error: string): Promise<void> {
    await q.query(this.#defer, [id, seconds, error.slice(0, 1000)]);
  }

  /** The pause before the attempt after `attempts`. */
  backoffMs(attempts: number): number {
    const { backoffSeconds } = this.spec;
    return (backoffSeconds[attempts - 1] ?? backoffSeconds.at(-1) ?? 60) * 1000;
  }

  /**
   * Handles due jobs one at a time until none is due or `stopped()`. A handler that throws, or answers `retry`,
   * has its job deferred (by `afterMs`, or the back-off of its attempts); `final` tells it this attempt is the
   * last, so it ends the job with what it has rather than ask again.
   */
  async drain(
    q: Queryable,
    handle: (job: J, attempt: { final: boolean }) => Promise<JobStep>,
    options: { stopped: () => boolean; onRetry?: (job: J, error: string) => void },
  ): Promise<void> {
    while (!options.stopped()) {
      const job = await this.claim(q);
      if (!job) return;
      let step: JobStep;
      try {
        step = await handle(job, { final: job.attempts >= this.spec.maxAttempts });
      } catch (err) {
        step = { retry: err instanceof Error ? err.message : String(err) };
      }
      if (step === 'ended') continue;
      options.onRetry?.(job, step.retry);
      await this.defer(q, job.id, (step.afterMs ?? this.backoffMs(job.attempts)) / 1000, step.retry);
    }
  }
}
