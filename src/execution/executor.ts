/**
 * The service's own executors in this process: up to `concurrency` runs at once. Woken by `runs.queued` on
 * the bus and by a poll; each claimed run gets an assignment, a workspace and its harness's CLI; the lease is kept
 * by heartbeats; a cancelled run (seen on the bus, or by the poll when the bus missed it) has its process
 * tree stopped; follow-ups reach the running agent when its harness takes them.
 */
import { RUNS_QUEUED_TOPIC, RUN_CHANGED_TOPIC } from '../kernel/topics.ts';
import { hostname } from 'node:os';
import { CoalescedPass } from '../kernel/coalesced-pass.ts';
import type { Logger } from '../kernel/log.ts';
import type { RunService } from '../runs/service.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { EventPipe } from './event-pipe.ts';
import { HandOff, insertsHandOffColumns } from '../engine/hand-off.ts';
import type { HandOffTarget } from '../engine/hand-off.ts';
import { adapterFor } from './harnesses/index.ts';
import type { Assignment } from './assignment.ts';
import { claimRuns } from '../engine/claim.ts';
import type { Claimed, ClaimOptions } from '../engine/claim.ts';
import type { ExecutionRecorder } from './recorder.ts';
import { ExecutionRunner } from './runner.ts';
import { claimedAssignments } from './runner-settings.ts';
import type { ExecutionSettings, HarnessType } from './settings.ts';
import { harnessChoice } from './settings.ts';
import * as sql from './sql.ts';
import type { CreatedRun } from '../engine/engine.ts';
import { announceRunChanges } from '../engine/announce.ts';
import { Loop } from '../kernel/loop.ts';

const HOST = hostname();

export interface ExecutorDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  settings: ExecutionSettings;
  recorder: ExecutionRecorder;
  secrets: SecretProvider;
  /** The signed session link of a run's session (src/runs/session-link.ts). */
  sessionLink: (sessionId: string) => string;
  /** The factory interface's URL the agents are given (AGENTYARD_PUBLIC_URL); absent: none. */
  factoryMcpUrl?: () => string;
  /** Where this process's API creates runs: the executor offers to claim them as they are created. */
  runs: Pick<RunService, 'offerHandOff'>;
  /** This process, as the lease holder names it. */
  processId: string;
  /** Told the runs of each claim as their executions begin (benchmarks). */
  onClaimed?: (runIds: string[]) => void;
}

interface Active {
  runId: string;
  executionId: string;
  runner: ExecutionRunner | undefined;
  /** Follow-ups handed to the agent (consumption is written asynchronously). */
  delivered: Set<string>;
}

export class ServiceExecutor implements HandOffTarget<HarnessType> {
  readonly #deps: ExecutorDeps;
  readonly #active = new Map<string, Active>();
  readonly #byRun = new Map<string, string>();
  readonly #unsubscribe: (() => void)[] = [];
  readonly #loops: Loop[] = [];
  readonly #dispatches = new CoalescedPass(
    () => this.#dispatch().catch((err: unknown) => this.#deps.log.warn({ err }, 'claiming runs failed')),
    () => !this.#stopped,
  );
  /** The last claim filled every free slot: runs may be waiting, so a slot that frees up looks at once. */
  #backlog = false;
  #soon = false;
  #stopped = false;
  readonly #finishing = new Set<Promise<void>>();
  /** Slots promised to hand-offs under way (claims made where runs are created, see hand-off.ts). */
  #reserved = 0;
  readonly #accepting = new Set<Promise<void>>();
  #handOff: HandOff | undefined;

  constructor(deps: ExecutorDeps) {
    this.#deps = deps;
  }

  get executorName(): string {
    return `service:${this.#deps.processId}`;
  }

  /** Runs executing in this process right now. */
  get load(): number {
    return this.#active.size;
  }

  get freeSlots(): number {
    return this.#stopped ? 0 : this.#deps.settings.concurrency - this.#active.size - this.#reserved;
  }

  #claimOptions(limit: number): ClaimOptions<HarnessType> {
    const { settings } = this.#deps;
    return {
      limit,
      harnesses: harnessChoice(settings.harnesses, settings.defaultHarness),
      executor: this.executorName,
      leaseMs: settings.leaseMs,
    };
  }

  reserve(n: number): ClaimOptions<HarnessType> {
    const slots = Math.max(0, Math.min(n, this.freeSlots));
    this.#reserved += slots;
    return this.#claimOptions(slots);
  }

  accept(claimed: Claimed<HarnessType>[], reserved: number): Promise<void> {
    const taking: Promise<void> = (claimed.length ? this.#take(claimed) : Promise.resolve())
      .catch((err: unknown) => this.#deps.log.warn({ err }, 'starting handed-off runs failed'))
      .finally(() => {
        // freed once the runs are active: a claim in between must not count their slots free
        this.#reserved -= reserved;
        this.#accepting.delete(taking);
      });
    this.#accepting.add(taking);
    return taking;
  }

  async start(): Promise<void> {
    const { bus, settings } = this.#deps;
    this.#unsubscribe.push(
      bus.subscribe(RUNS_QUEUED_TOPIC, (data) => {
        if (!(data as { worker_host?: string | null } | null)?.worker_host) this.wake();
      }),
      bus.subscribe(RUN_CHANGED_TOPIC, (data) =>
        this.#onRunChanged(data as { run_id?: string; state?: string; followup_id?: string } | null),
      ),
    );
    const every = (name: string, ms: number, pass: () => Promise<void>) =>
      this.#loops.push(
        new Loop({
          name,
          everyMs: ms,
          atStart: false,
          pass,
          onError: (err) => this.#deps.log.warn({ err }, 'executor tick failed'),
        }).start(),
      );
    every('executor poll', settings.pollMs, async () => {
      this.wake();
      await this.#poll();
    });
    every('executor heartbeat', settings.heartbeatMs, () => this.#heartbeat());
    await this.#register();
    if (settings.concurrency > 0 && settings.harnesses.length > 0 && this.#handOffColumnsMatch()) {
      const handOff = new HandOff(this.#deps.db, this.#deps.bus, this, (runs) => this.#announceQueued(runs));
      this.#handOff = handOff;
      this.#unsubscribe.push(this.#deps.runs.offerHandOff(handOff));
    }
    this.wake();
  }

  #handOffColumnsMatch(): boolean {
    if (insertsHandOffColumns()) return true;
    this.#deps.log.warn(
      'runs are inserted with columns the hand-off statement (functions.sql) does not list: new runs wait for a claim of their own',
    );
    return false;
  }

  /** Runs a hand-off inserted but did not claim are announced as RunService announces new runs. */
  #announceQueued(runs: CreatedRun[]): void {
    void announceRunChanges(
      this.#deps.bus,
      runs.map((r) => ({ ...r, created: true })),
    );
  }

  /**
   * Looks for queued runs after the current turn of the event loop: executions that end together (their ends
   * are written in one batch) free their slots together, and one claim fills them all.
   */
  #wakeSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      this.wake();
    });
  }

  /** Looks for queued runs now (coalesced with a pass already under way). */
  wake(): void {
    this.#dispatches.request();
  }

  /** Resolves once no claim pass runs (the one `wake()` asked for has ended): for tests. */
  claimsIdle(): Promise<void> {
    return this.#dispatches.idle();
  }

  async #dispatch(): Promise<void> {
    const { settings } = this.#deps;
    while (!this.#stopped) {
      const free = settings.concurrency - this.#active.size - this.#reserved;
      if (free <= 0) {
        this.#backlog = true;
        return;
      }
      const claimed = await claimRuns(this.#deps.db, this.#deps.bus, { kind: 'service' }, this.#claimOptions(free));
      this.#backlog = claimed.length >= free;
      if (claimed.length === 0) return;
      await this.#take(claimed);
      if (claimed.length < free) return;
    }
  }

  /** Starts executing claimed runs. */
  async #take(claimed: Claimed<HarnessType>[]): Promise<void> {
    const assignments = await claimedAssignments(
      this.#deps.db,
      this.#deps.secrets,
      claimed,
      this.#deps.sessionLink,
      this.#deps.factoryMcpUrl,
      this.#deps.settings.sandbox.containerRuntime !== undefined,
    );
    claimed.forEach((c, i) => this.#launch(c, assignments[i]!));
    this.#deps.onClaimed?.(claimed.map((c) => c.run.id));
  }

  #launch(claimed: Claimed<HarnessType>, assignment: Assignment | Error): void {
    const active: Active = {
      runId: claimed.run.id,
      executionId: claimed.executionId,
      runner: undefined,
      delivered: new Set(),
    };
    this.#active.set(claimed.executionId, active);
    this.#byRun.set(claimed.run.id, claimed.executionId);
    const done = this.#execute(claimed, assignment, active)
      .catch((err: unknown) => this.#deps.log.error({ err, runId: claimed.run.id }, 'execution failed'))
      .finally(() => {
        this.#active.delete(claimed.executionId);
        if (this.#byRun.get(claimed.run.id) === claimed.executionId) this.#byRun.delete(claimed.run.id);
        this.#finishing.delete(done);
        // new runs announce themselves; a full queue behind a full executor does not
        if (this.#backlog) this.#wakeSoon();
      });
    this.#finishing.add(done);
  }

  async #execute(claimed: Claimed<HarnessType>, assignment: Assignment | Error, active: Active): Promise<void> {
    const { recorder, settings, log } = this.#deps;
    const { run, executionId } = claimed;
    if (assignment instanceof Error) {
      await recorder.unassigned({ executionId, runId: run.id }, assignment);
      return;
    }
    const pipe = new EventPipe(
      (events) => recorder.events(run.id, executionId, events),
      (err) => log.warn({ err, runId: run.id }, 'storing run events failed'),
    );
    const runner = new ExecutionRunner(assignment, settings, {
      starting: ({ workspace, sandbox }) =>
        recorder.started({
          executionId,
          runId: run.id,
          workspace,
          leaseMs: settings.leaseMs,
          followupIds: assignment.followups.map((f) => f.id),
          where: `${HOST} (${this.executorName}) with the ${assignment.harness} harness, ${sandbox}`,
          location: 'LOCAL',
        }),
      events: (events) => pipe.push(events),
    });
    active.runner = runner;
    for (const f of assignment.followups) active.delivered.add(f.id);
    const outcome = await runner.done;
    await pipe.drain();
    await recorder.finished({ executionId, runId: run.id, outcome, usage: runner.usage });
  }

  #onRunChanged(data: { run_id?: string; state?: string; followup_id?: string } | null): void {
    const executionId = data?.run_id ? this.#byRun.get(data.run_id) : undefined;
    if (!executionId) return;
    const active = this.#active.get(executionId);
    if (!active) return;
    if (data?.state === 'CANCELLED') void active.runner?.stop('cancelled');
    if (data?.followup_id) void this.#deliverFollowups([active]);
  }

  /** Hands waiting follow-ups to agents whose harness takes them while running. */
  async #deliverFollowups(actives: Active[]): Promise<void> {
    const live = actives.filter((a) => a.runner && adapterFor(a.runner.assignment.harness)?.liveFollowups);
    if (live.length === 0) return;
    const res = await sql.waitingFollowups(
      this.#deps.db,
      live.map((a) => a.runId),
    );
    for (const f of res.rows) {
      const active = live.find((a) => a.runId === f.run_id);
      if (!active || active.delivered.has(f.id)) continue;
      if (active.runner!.deliverFollowup({ id: f.id, message: f.message })) active.delivered.add(f.id);
    }
  }

  async #poll(): Promise<void> {
    const actives = [...this.#active.values()].filter((a) => a.runner);
    if (actives.length === 0) return;
    const checks = await this.#deps.recorder.check(actives.map((a) => a.executionId));
    for (const c of checks) {
      if (c.verdict !== 'live') void this.#active.get(c.executionId)?.runner?.stop(c.verdict);
    }
    await this.#deliverFollowups(actives);
  }

  async #heartbeat(): Promise<void> {
    await this.#register();
    const ids = [...this.#active.keys()];
    const checks = await this.#deps.recorder.heartbeat(ids, this.#deps.settings.leaseMs);
    for (const c of checks) {
      if (c.verdict !== 'live') void this.#active.get(c.executionId)?.runner?.stop(c.verdict);
    }
  }

  /** Says what this process offers, so that a run nobody here can take says what it waits for. */
  async #register(): Promise<void> {
    const { settings } = this.#deps;
    await sql.registerExecutorProcess(this.#deps.db, {
      id: this.#deps.processId,
      host: hostname(),
      capacity: settings.concurrency,
      harnesses: settings.harnesses,
      defaultHarness: settings.defaultHarness ?? null,
    });
  }

  /** Stops claiming; agents still running are stopped and their runs end ERROR (the server is going away). */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const u of this.#unsubscribe) u();
    await Promise.all(this.#loops.map((l) => l.stop()));
    await this.#dispatches.idle();
    // runs claimed by hand-offs under way are launched, then stopped with the others
    await this.#handOff?.drain();
    await Promise.all([...this.#accepting]);
    for (const a of this.#active.values()) {
      void a.runner?.stop('shutdown', {
        message: 'the server executing the run shut down',
        errorCode: 'executor_stopped',
      });
    }
    await Promise.all([...this.#finishing]);
    await sql.deleteExecutorProcess(this.#deps.db, this.#deps.processId).catch(() => {});
  }
}
