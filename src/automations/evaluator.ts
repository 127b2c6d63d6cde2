import { DELIVERIES_ACCEPTED_TOPIC, DELIVERIES_EVALUATED_TOPIC, INTEGRATION_JOBS_TOPIC } from '../kernel/topics.ts';
import type { Logger } from '../kernel/log.ts';
import { DrainLoop } from '../kernel/drain-loop.ts';
import { isAppError } from '../kernel/errors.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import type { CreateRunInput, RunService } from '../runs/service.ts';
import { DailyCapReached } from '../runs/daily-caps.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import { EVENT_PAYLOAD_FILE, runPrompt, runTitle } from './envelope.ts';
import { matchPayloadFilter } from './payload-filter.ts';
import * as sql from './sql.ts';
import type { OutboxDelivery, Subscription } from './sql.ts';
import { subscribedRun } from './run-input.ts';
import { providerFirings } from './provider-runs.ts';
import { recordConnectionNotes } from '../integrations/sql.ts';
import { concurrencyOf } from '../definitions/concurrency-key.ts';
import { announceRunChanges } from '../engine/announce.ts';
import type { RunChange } from '../engine/announce.ts';
import { applyConcurrency, concurrencySkip, webhookKey } from './concurrency.ts';
import type { FiringConcurrency } from './concurrency.ts';
import type { ConnectionNotes } from '../integrations/sql.ts';

export interface EvaluatorOptions {
  /** Deliveries evaluated per transaction. */
  batchSize?: number;
  /** A look at the outbox even without a notice (a lost NOTIFY, rows left by a crashed process). */
  pollIntervalMs?: number;
  /** Called inside the transaction after the runs are inserted, before commit (tests simulate a crash here). */
  beforeCommit?: (batch: { deliveryIds: string[]; runIds: string[] }) => Promise<void>;
}

export interface BatchResult {
  deliveries: number;
  runs: { runId: string; workerHost: string | null }[];
  /** Integration jobs enqueued (changed files, factory checks, Linear mentions). */
  integrationJobs: number;
}

/**
 * The automation evaluator: takes accepted deliveries from the durable outbox (`FOR UPDATE SKIP LOCKED`, so
 * several processes share the work), starts one run per matching automation, and marks the deliveries
 * evaluated, all in one transaction. A crash before the commit rolls everything back and the deliveries are
 * evaluated again; `automation_firings` (one row per delivery and automation) makes a second run impossible
 * even if that ever overlapped.
 */
/**
 * Chat threads that continue runs (docs/orchestration.md): a provider delivery that is a message in a thread of a
 * run becomes that run's follow-up and starts nothing; a run a provider delivery starts is linked to its thread.
 */
export interface ChatContinuation {
  /** In the evaluation's transaction: the follow-ups the delivery is, with what to announce after the commit; undefined when it continues no run. */
  continues(tx: Queryable, delivery: OutboxDelivery): Promise<{ announce(): Promise<void> } | undefined>;
  /** In the evaluation's transaction: a run this delivery started. */
  started(tx: Queryable, run: { id: string; team_id: string }, input: CreateRunInput): Promise<void>;
}

/** What the evaluator works with. */
export interface EvaluatorDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  /** Where its runs are created, in the evaluation's transaction. */
  runs: RunService;
  /** Chat threads that continue runs; absent: every delivery is matched to triggers. */
  threads?: ChatContinuation;
}

export class OutboxEvaluator extends DrainLoop {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #runs: RunService;
  readonly #log: Logger;
  readonly #batchSize: number;
  readonly #beforeCommit: EvaluatorOptions['beforeCommit'];
  readonly #threads: ChatContinuation | undefined;

  constructor({ db, bus, log, runs, threads }: EvaluatorDeps, options: EvaluatorOptions = {}) {
    super({ bus, topic: DELIVERIES_ACCEPTED_TOPIC, pollIntervalMs: options.pollIntervalMs ?? 2_000 });
    this.#db = db;
    this.#bus = bus;
    this.#log = log;
    this.#runs = runs;
    this.#batchSize = options.batchSize ?? 50;
    this.#beforeCommit = options.beforeCommit;
    this.#threads = threads;
  }

  /** Evaluates batches until the outbox is empty. */
  protected async drain(): Promise<void> {
    try {
      while (!this.stopped) {
        const result = await this.evaluateBatch();
        if (result.deliveries < this.#batchSize) return;
      }
    } catch (err) {
      this.#log.error({ err }, 'evaluating webhook deliveries failed; retrying at the next poll');
    }
  }

  /**
   * One transaction: claim up to a batch of pending deliveries, start their runs, mark them evaluated; then
   * the provider connections' last event and error, outside it (recordConnectionNotes says why).
   */
  async evaluateBatch(): Promise<BatchResult> {
    const notes: ConnectionNotes = { lastEvents: [], lastErrors: [] };
    const continued: { announce(): Promise<void> }[] = [];
    const superseded: RunChange[] = [];
    const result = await this.#db.transaction(async (tx) => {
      notes.lastEvents.length = 0;
      notes.lastErrors.length = 0;
      continued.length = 0;
      superseded.length = 0;
      const deliveries = await sql.claimOutbox(tx, this.#batchSize);
      if (deliveries.length === 0) return { deliveries: 0, runs: [], integrationJobs: 0 };
      const jobs = { queued: 0 };
      const runs = await this.#startRuns(tx, deliveries, jobs, notes, continued, superseded);
      const deliveryIds = deliveries.map((d) => d.id);
      await this.#beforeCommit?.({ deliveryIds, runIds: runs.map((r) => r.runId) });
      await sql.markEvaluated(tx, deliveryIds);
      return { deliveries: deliveries.length, runs, integrationJobs: jobs.queued };
    });
    try {
      await recordConnectionNotes(this.#db, notes);
    } catch (err) {
      this.#log.warn({ err }, "recording the provider connections' last event failed");
    }
    this.#runs.announce(result.runs.map((r) => ({ id: r.runId, worker_host: r.workerHost })));
    if (superseded.length > 0) await announceRunChanges(this.#bus, superseded);
    for (const c of continued)
      await c.announce().catch((err: unknown) => this.#log.warn({ err }, 'announcing follow-ups failed'));
    if (result.integrationJobs > 0) await this.#bus.publish(INTEGRATION_JOBS_TOPIC, null);
    if (result.deliveries > 0)
      await this.#bus
        .publish(DELIVERIES_EVALUATED_TOPIC, { deliveries: result.deliveries, runs: result.runs.length })
        .catch(() => {});
    return result;
  }

  async #startRuns(
    tx: Queryable,
    all: OutboxDelivery[],
    jobs: { queued: number },
    notes: ConnectionNotes,
    continued: { announce(): Promise<void> }[],
    superseded: RunChange[],
  ): Promise<BatchResult['runs']> {
    const runs: BatchResult['runs'] = [];
    const deliveries = all.filter((d) => d.provider === null);
    for (const delivery of all) {
      if (delivery.provider === null) continue;
      const continuation = await this.#threads?.continues(tx, delivery);
      if (continuation) {
        continued.push(continuation);
        continue;
      }
      const evaluation = await providerFirings(tx, delivery, notes);
      jobs.queued += evaluation.jobsQueued;
      for (const firing of evaluation.firings) {
        if ('skipped' in firing) await this.#skip(tx, delivery.id, firing.automationId, firing.skipped);
        else
          await this.#fire(
            tx,
            {
              deliveryId: delivery.id,
              automationId: firing.automationId,
              input: firing.input,
              concurrency: firing.concurrency,
            },
            runs,
            superseded,
            this.#threads,
          );
      }
    }
    if (deliveries.length === 0) return runs;
    const subs = await sql.subscriptions(tx, [...new Set(deliveries.map((d) => d.webhook_uid))]);
    if (subs.length === 0) return runs;
    for (const delivery of deliveries) {
      const forWebhook = subs.filter((s) => s.webhook_uid === delivery.webhook_uid && s.team_id === delivery.team_id);
      if (forWebhook.length === 0) continue;
      const parsed = parseJsonBody(delivery.payload);
      if (!parsed) continue;
      for (const sub of firstMatchPerAutomation(forWebhook, parsed.value)) {
        const policy = concurrencyOf(sub.concurrency);
        const firing = { deliveryId: delivery.id, automationId: sub.automation_id, input: runInputFor(delivery, sub) };
        await this.#fire(tx, { ...firing, concurrency: policy && webhookKey(policy, parsed.value) }, runs, superseded);
      }
    }
    return runs;
  }

  /** Records that the automation's trigger matched but its factory's trigger policy starts no run, and why. */
  async #skip(tx: Queryable, deliveryId: string, automationId: string, reason: string): Promise<void> {
    if (await sql.claimFiring(tx, deliveryId, automationId))
      await sql.recordFiring(tx, deliveryId, automationId, { skipped: reason });
  }

  /**
   * Starts the automation's run for the delivery unless it has fired for it already, or records why it starts
   * none (its concurrency key at its limit with `onNew: skip`).
   */
  async #fire(
    tx: Queryable,
    firing: {
      deliveryId: string;
      automationId: string;
      input: CreateRunInput;
      concurrency?: FiringConcurrency | undefined;
    },
    runs: BatchResult['runs'],
    superseded: RunChange[],
    threads?: ChatContinuation,
  ): Promise<void> {
    const { deliveryId, automationId, input, concurrency } = firing;
    if (!(await sql.claimFiring(tx, deliveryId, automationId))) return;
    const factoryId = input.factoryId;
    if (concurrency && factoryId) {
      const skipped = await concurrencySkip(tx, factoryId, concurrency);
      if (skipped) {
        await sql.recordFiring(tx, deliveryId, automationId, { skipped });
        return;
      }
    }
    try {
      const { run } = await this.#runs.create(input, { within: tx });
      if (concurrency && factoryId) superseded.push(...(await applyConcurrency(tx, run, factoryId, concurrency)));
      await threads?.started(tx, run, input);
      await sql.recordFiring(tx, deliveryId, automationId, { runId: run.id });
      runs.push({ runId: run.id, workerHost: run.worker_host });
    } catch (err) {
      // Past a daily cap of its factory, agent or automation: the firing is skipped, and says why.
      if (err instanceof DailyCapReached) {
        await sql.recordFiring(tx, deliveryId, automationId, { skipped: err.skipReason });
        return;
      }
      // The automation's stored configuration is not a valid run: record why, never retry it forever.
      if (!isAppError(err)) throw err;
      this.#log.warn(
        { err, automation_id: automationId, delivery_id: deliveryId },
        'an automation could not start its run',
      );
      await sql.recordFiring(tx, deliveryId, automationId, { error: err.message });
    }
  }
}

/** Each automation at most once, for the first of its triggers on this webhook whose payload filter matches. */
export function firstMatchPerAutomation(subs: readonly Subscription[], payload: unknown): Subscription[] {
  const chosen = new Map<string, Subscription>();
  for (const sub of subs) {
    if (chosen.has(sub.automation_id)) continue;
    if (sub.payload_filter === null || matchPayloadFilter(sub.payload_filter, payload).matched)
      chosen.set(sub.automation_id, sub);
  }
  return [...chosen.values()];
}

function runInputFor(delivery: OutboxDelivery, sub: Subscription): CreateRunInput {
  const { base, automation } = subscribedRun(sub);
  const envelope = {
    automation,
    webhook: { uid: delivery.webhook_uid, name: delivery.webhook_name },
    deliveryId: delivery.id,
  };
  return {
    ...base,
    prompt: runPrompt(envelope),
    title: runTitle(envelope),
    source: 'WEBHOOK',
    deliveryId: delivery.id,
    attachments: [{ fileName: EVENT_PAYLOAD_FILE, mimeType: 'application/json', data: Buffer.from(delivery.payload) }],
  };
}
