import { FACTORIES_CHANGED_TOPIC, FACTORY_SYNC_REQUESTED_TOPIC } from '../kernel/topics.ts';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { DirectorySource } from '../sources/directory.ts';
import { AppError } from '../kernel/errors.ts';
import type { ApplyOutcome, ApplyTrigger, FactoryRow } from './apply/model.ts';
import * as sql from './apply/sql.ts';
import { FactoryGoneError, Reconciler } from './apply/reconciler.ts';
import type { ReconcilerDeps } from './apply/reconciler.ts';
import type { Clock } from '../kernel/clock.ts';
import { WorkQueue } from '../kernel/work-queue.ts';
import { Loop } from '../kernel/loop.ts';

/** Retries of transient failures: 2 s, doubling, at most 5 minutes. */
const MAX_BACKOFF_MS = 5 * 60_000;
const FIRST_BACKOFF_MS = 2_000;

export interface FactoryControllerOptions {
  /** The time retries wait by (tests pass a ManualClock). */
  clock?: Clock;
}

/** What the next reconcile of a factory does and who waits for it; requests coalesce into one job. */
interface Job {
  trigger: ApplyTrigger;
  explicit: boolean;
  waiters: { resolve(o: ApplyOutcome): void; reject(e: unknown): void }[];
}

interface Tracked {
  key: string;
  poll: Loop | undefined;
  stopWatching: (() => Promise<void>) | undefined;
}

/**
 * Runs the reconcile loops of every factory in this process: git pollers, directory watchers and a first
 * reconcile at start. Reconciles run on one work queue keyed by factory: one at a time per factory (any number
 * of factories at once), requests coalescing while one runs; an explicit request (sync, push) always gets a
 * fetch that starts after it arrived. Transient failures are retried with the queue's per-factory back-off.
 */
export class FactoryController {
  readonly reconciler: Reconciler;
  readonly #deps: ReconcilerDeps;
  readonly #tracked = new Map<string, Tracked>();
  /** The job of each factory's next reconcile; a queued key without one is a retry. */
  readonly #pending = new Map<string, Job>();
  readonly #queue: WorkQueue;
  readonly #processing: Promise<void>;
  readonly #unsubscribe: (() => void)[] = [];
  #loops = false;
  #stopped = false;

  constructor(deps: ReconcilerDeps, options: FactoryControllerOptions = {}) {
    this.#deps = deps;
    this.reconciler = new Reconciler(deps);
    this.#queue = new WorkQueue({
      baseDelayMs: FIRST_BACKOFF_MS,
      maxDelayMs: MAX_BACKOFF_MS,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    this.#processing = this.#queue.process((factoryId) => this.#reconcile(factoryId));
  }

  /** Are the loops running here (the `controller` role)? */
  get runsLoops(): boolean {
    return this.#loops && !this.#stopped;
  }

  /** Factories waiting out a back-off before their next retry. */
  get retrying(): number {
    return this.#queue.delayed;
  }

  /** Calls `listener` after each reconcile ended (a retry scheduled by then); answers the function that removes it. */
  onReconciled(listener: (factoryId: string) => void): () => void {
    return this.#queue.onDone(listener);
  }

  /** Starts the loops for every factory and follows factories created, changed and deleted elsewhere. */
  async start(): Promise<void> {
    this.#loops = true;
    const { bus, db } = this.#deps;
    this.#unsubscribe.push(
      bus.subscribe(FACTORIES_CHANGED_TOPIC, (data) => {
        const msg = data as { factory_id?: string; event?: string } | null;
        if (!msg?.factory_id || msg.event === 'reconciled') return;
        void this.#refresh(msg.factory_id);
      }),
      bus.subscribe(FACTORY_SYNC_REQUESTED_TOPIC, (data) => {
        const msg = data as { factory_id?: string; trigger?: ApplyTrigger } | null;
        if (msg?.factory_id && this.#tracked.has(msg.factory_id))
          void this.request(msg.factory_id, msg.trigger ?? 'sync', true).catch(() => {});
      }),
    );
    for (const factory of await sql.listAllFactories(db)) await this.track(factory);
  }

  async #refresh(factoryId: string): Promise<void> {
    if (!this.runsLoops) return;
    const factory = await sql.getFactory(this.#deps.db, factoryId).catch(() => undefined);
    if (factory) await this.track(factory);
    else await this.untrack(factoryId);
  }

  /** Starts (or re-points) the loop of one factory; a no-op when it already runs with the same source. */
  async track(factory: FactoryRow): Promise<void> {
    if (!this.runsLoops) return;
    const key = JSON.stringify(factory.source);
    const existing = this.#tracked.get(factory.id);
    if (existing?.key === key) return;
    if (existing) await this.#stopTracking(factory.id, existing);
    const tracked: Tracked = { key, poll: undefined, stopWatching: undefined };
    this.#tracked.set(factory.id, tracked);
    const spec = factory.source;
    if (spec.type === 'git' && spec.poll_interval_seconds > 0) {
      tracked.poll = new Loop({
        name: `factory ${factory.id} poll`,
        everyMs: spec.poll_interval_seconds * 1000,
        atStart: false,
        pass: () => void this.request(factory.id, 'poll', false).catch(() => {}),
      }).start();
    }
    if (spec.type === 'directory') {
      const source = this.reconciler.sourceFor(factory);
      if (source instanceof DirectorySource) {
        try {
          tracked.stopWatching = await source.watch(
            () => void this.request(factory.id, 'watch', false).catch(() => {}),
          );
        } catch (err) {
          this.#deps.log.warn(
            { err, factory_id: factory.id },
            `watch ${source.describe()}: cannot watch; changes apply on sync only`,
          );
        }
      }
    }
    void this.request(factory.id, 'start', false).catch(() => {});
  }

  async untrack(factoryId: string): Promise<void> {
    const tracked = this.#tracked.get(factoryId);
    if (tracked) await this.#stopTracking(factoryId, tracked);
    this.reconciler.forget(factoryId);
  }

  async #stopTracking(factoryId: string, tracked: Tracked): Promise<void> {
    this.#tracked.delete(factoryId);
    await tracked.poll?.stop();
    this.#queue.drop(factoryId);
    await tracked.stopWatching?.();
  }

  /** Fetches and reconciles the factory now (coalesced with a request already waiting). */
  request(factoryId: string, trigger: ApplyTrigger, explicit: boolean): Promise<ApplyOutcome> {
    if (this.#stopped) return Promise.reject(new AppError('resource_unavailable', 'the server is stopping'));
    return new Promise<ApplyOutcome>((resolve, reject) => {
      const pending = this.#pending.get(factoryId);
      if (pending) {
        if (explicit && !pending.explicit) pending.trigger = trigger;
        pending.explicit ||= explicit;
        pending.waiters.push({ resolve, reject });
      } else {
        this.#pending.set(factoryId, { trigger, explicit, waiters: [{ resolve, reject }] });
      }
      this.#queue.add(factoryId);
    });
  }

  async #reconcile(factoryId: string): Promise<void> {
    const job = this.#pending.get(factoryId) ?? this.#retry(factoryId);
    if (!job) return;
    this.#pending.delete(factoryId);
    try {
      const result = await this.reconciler.reconcile(factoryId, { trigger: job.trigger, explicit: job.explicit });
      this.#afterOutcome(factoryId, result);
      for (const w of job.waiters) w.resolve(result);
    } catch (err) {
      if (err instanceof FactoryGoneError) await this.untrack(factoryId);
      else this.#deps.log.error({ err, factory_id: factoryId }, 'reconcile failed');
      for (const w of job.waiters) w.reject(err);
    }
  }

  /** A key that comes back with no request is a retry after a transient failure (while the factory is tracked). */
  #retry(factoryId: string): Job | undefined {
    if (!this.#tracked.has(factoryId) || this.#stopped) return undefined;
    return { trigger: 'poll', explicit: false, waiters: [] };
  }

  /** Transient failures are retried with back-off; anything else waits for a new commit, an event or a sync. */
  #afterOutcome(factoryId: string, result: ApplyOutcome): void {
    if (!this.#tracked.has(factoryId) || this.#stopped) return;
    if (result.result === 'failed' && result.transient) this.#queue.addRateLimited(factoryId);
    else this.#queue.forget(factoryId);
  }

  /** Removes the local copy of a deleted factory's git source (the managed repository is kept as its history). */
  async forgetFactory(factory: FactoryRow): Promise<void> {
    await this.untrack(factory.id);
    if (factory.source.type === 'git')
      await rm(path.join(this.#deps.dataDir, 'sources', factory.id), { recursive: true, force: true });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    for (const [id, tracked] of [...this.#tracked]) await this.#stopTracking(id, tracked);
    this.#queue.shutDown();
    this.#rejectPending();
    await this.#processing;
    // Requests that arrived while the reconciles under way finished.
    this.#rejectPending();
  }

  #rejectPending(): void {
    for (const job of this.#pending.values())
      for (const w of job.waiters) w.reject(new AppError('resource_unavailable', 'the server is stopping'));
    this.#pending.clear();
  }
}
