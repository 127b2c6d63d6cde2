import { availableParallelism } from 'node:os';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { AppError } from '../kernel/errors.ts';
import type { DeploymentNotes } from './context.ts';
import type { FactoryFileInput } from './load.ts';
import type { ValidationResult } from './validate.ts';
import type {
  ContextAnswer,
  ContextQuestion,
  ContextSnapshot,
  TaskOutcome,
  ValidateTask,
  WorkerMessage,
} from './validate-worker.ts';
import { SCHEMA_VERSION } from './schemas.ts';

/**
 * What a validation in the pool may know about live state (everything an apply knows): the questions (secrets,
 * integrations) are answered on this thread, the rest is copied to the worker.
 */
export interface PoolContext {
  secretExists?(name: string): boolean | Promise<boolean>;
  secretIsUrlSafe?(name: string): boolean | Promise<boolean>;
  /** Webhook file name → the UID it already has. */
  webhookUids?: ReadonlyMap<string, string>;
  knownWebhookUids?: ReadonlySet<string>;
  /** Team runners that exist outside the tree. */
  teamRunners?: ReadonlySet<string>;
  /** The deployment's model catalogue (ValidationContext.models). */
  models?: { ids: ReadonlySet<string>; closed: boolean };
  deploymentNotes?: DeploymentNotes;
  /** Has the team connected this integration (ValidationContext.integrationConnected)? */
  integrationConnected?(type: string): boolean | Promise<boolean>;
  /** The IDs of names in a name alias (ValidationContext.resolveNames). */
  resolveNames?(provider: string, field: string, names: readonly string[]): Promise<Map<string, string[]>>;
}

export interface DefinitionPoolOptions {
  /**
   * Longest a validation may run, from when its worker takes it (the wait for a worker and the worker's start are
   * not counted); the worker running it is terminated then.
   */
  timeoutMs: number;
  /** Heap of a worker (V8's old generation); a validation that needs more ends its worker. */
  memoryMb: number;
  /** Worker threads of the request lane at most; defaults to one less than the CPUs, at least one. */
  threads?: number;
  /** Validate requests waiting for a thread at most; more are refused with `resource_unavailable`. */
  maxQueue?: number;
  /**
   * Longest a validate request may wait for a thread of its lane; then it is refused with `resource_unavailable`
   * (429, Retry-After) rather than left hanging behind others.
   */
  queueWaitMs?: number;
}

export const DEFAULT_POOL_OPTIONS: DefinitionPoolOptions = { timeoutMs: 10_000, memoryMb: 256, queueWaitMs: 5_000 };

/** How busy a lane is: validations on its threads and waiting for one, and how many it has finished. */
export interface LaneLoad {
  running: number;
  queued: number;
  completed: number;
}

/** Which capacity a validation uses: the validate endpoint's (anyone's requests), or the reconciler's own. */
export type Lane = 'requests' | 'applies';

function refusal(files: readonly FactoryFileInput[], message: string): ValidationResult {
  const root = files.find((f) => f.path === 'factory.yaml')?.path ?? 'factory.yaml';
  return {
    valid: false,
    schemaVersion: SCHEMA_VERSION,
    diagnostics: [{ file: root, line: 1, column: 1, path: '', code: 'FF_LIMIT_EXCEEDED', message, severity: 'error' }],
    stateDependentChecksNotRun: [],
    deferredResolutions: [],
  };
}

function snapshotOf(context: PoolContext): ContextSnapshot {
  return {
    ...(context.webhookUids ? { webhookUids: [...context.webhookUids] } : {}),
    ...(context.knownWebhookUids ? { knownWebhookUids: [...context.knownWebhookUids] } : {}),
    ...(context.teamRunners ? { teamRunners: [...context.teamRunners] } : {}),
    ...(context.deploymentNotes ? { deploymentNotes: context.deploymentNotes } : {}),
    ...(context.models ? { models: { ids: [...context.models.ids], closed: context.models.closed } } : {}),
    ...(context.secretExists || context.secretIsUrlSafe ? { secrets: true } : {}),
    ...(context.integrationConnected || context.resolveNames ? { integrations: true } : {}),
  };
}

/**
 * Parses and validates factory trees on worker threads, so that a hostile tree (deep nesting, huge files)
 * costs a worker, never the event loop: each job has a time and a heap budget and answers a
 * `FF_LIMIT_EXCEEDED` diagnostic when it runs out of either. Two lanes of threads: validate requests (which
 * anyone may send) queue only behind each other, for a bounded time, and never take the thread the reconciler
 * validates teams' applies on.
 */
export class DefinitionPool {
  readonly options: DefinitionPoolOptions;
  readonly #lanes: Record<Lane, Piscina<ValidateTask, TaskOutcome>>;
  readonly #running: Record<Lane, number> = { requests: 0, applies: 0 };
  readonly #completed: Record<Lane, number> = { requests: 0, applies: 0 };

  constructor(options: DefinitionPoolOptions = DEFAULT_POOL_OPTIONS) {
    this.options = options;
    const threads = options.threads ?? Math.max(1, availableParallelism() - 1);
    const lane = (maxThreads: number, maxQueue: number) => {
      const pool = new Piscina<ValidateTask, TaskOutcome>({
        filename: new URL('./validate-worker.ts', import.meta.url).href,
        minThreads: 0,
        maxThreads,
        idleTimeout: 60_000,
        maxQueue,
        resourceLimits: { maxOldGenerationSizeMb: options.memoryMb, maxYoungGenerationSizeMb: 16 },
        // Below the event loop's priority: on a busy machine, webhooks and the API go first.
        niceIncrement: 10,
      });
      // A worker that dies outside a job (out of memory while starting) is replaced; its job's own failure answers.
      pool.on('error', () => {});
      return pool;
    };
    this.#lanes = {
      requests: lane(threads, options.maxQueue ?? threads * 8),
      // One thread of its own: applies are serialised per factory and small; they queue only behind applies.
      applies: lane(1, 1_000),
    };
  }

  /** A factory tree of an apply, a plan or a check: on the reconciler's lane. */
  async validate(files: readonly FactoryFileInput[], context?: PoolContext): Promise<ValidationResult> {
    const outcome = await this.#run('applies', { files: files.map((f) => ({ ...f })) }, files, context);
    if ('problem' in outcome) throw new Error(outcome.problem.detail);
    return outcome.result;
  }

  /**
   * A validate request's JSON body, parsed, checked against the request caps and validated on a worker of the
   * requests lane: the event loop only copies the bytes. Answers the result, or the problem that refuses the
   * request; throws `resource_unavailable` when the lane's queue is full or the wait for a thread too long.
   */
  validateRequest(body: Buffer, context?: PoolContext): Promise<TaskOutcome> {
    const copy = new Uint8Array(body.length);
    copy.set(body);
    return this.#run('requests', { body: copy }, [], context, [copy.buffer]);
  }

  /** The load of a lane (for readiness, metrics and tests). */
  load(lane: Lane): LaneLoad {
    return { running: this.#running[lane], queued: this.#lanes[lane].queueSize, completed: this.#completed[lane] };
  }

  async #run(
    lane: Lane,
    task: ValidateTask,
    files: readonly FactoryFileInput[],
    context: PoolContext | undefined,
    transfer: ArrayBuffer[] = [],
  ): Promise<TaskOutcome> {
    // The worker says when it takes the job (and asks its questions about live state) over this channel.
    const channel = new MessageChannel();
    const port = channel.port1;
    task.port = channel.port2;
    if (context) task.context = snapshotOf(context);
    const abort = new AbortController();
    // The budget runs from when the worker takes the job, questions included: a question never answered (a
    // provider that hangs) ends with the job.
    let timer: NodeJS.Timeout | undefined;
    let started = false;
    const waitMs = this.options.queueWaitMs;
    // A request still waiting after `queueWaitMs` behind others' jobs is taken out of the queue and refused.
    // While none runs, the wait is a worker starting (slow on a loaded machine): it is not held against anyone.
    let waitTimer: NodeJS.Timeout | undefined;
    const armWait = () => {
      waitTimer = setTimeout(() => {
        if (started) return;
        if (this.#running[lane] > 0) abort.abort(new QueueWaitExceeded());
        else armWait();
      }, waitMs);
    };
    if (lane === 'requests' && waitMs !== undefined && waitMs > 0) armWait();
    port.on('message', (message: WorkerMessage) => {
      if ('started' in message) {
        if (!started) this.#running[lane]++;
        started = true;
        clearTimeout(waitTimer);
        timer ??= setTimeout(() => abort.abort(), this.options.timeoutMs);
      } else if (context) void answer(port, message, context);
    });
    try {
      return await this.#lanes[lane].run(task, { signal: abort.signal, transferList: [...transfer, channel.port2] });
    } catch (err) {
      if (!started && abort.signal.reason instanceof QueueWaitExceeded)
        throw new AppError(
          'resource_unavailable',
          `every factory-validation thread stayed busy for ${(waitMs ?? 0) / 1000} s; retry shortly`,
          { headers: { 'retry-after': String(Math.max(1, Math.ceil((waitMs ?? 0) / 1000))) } },
        );
      return { result: this.#failed(files, err) };
    } finally {
      clearTimeout(timer);
      clearTimeout(waitTimer);
      port.close();
      if (started) this.#running[lane]--;
      // A job may end before its start message is read: it counts as done all the same.
      if (!(abort.signal.reason instanceof QueueWaitExceeded)) this.#completed[lane]++;
    }
  }

  #failed(files: readonly FactoryFileInput[], err: unknown): ValidationResult {
    const e = err as Error & { code?: string };
    if (e.name === 'AbortError')
      return refusal(
        files,
        `validation did not finish within ${this.options.timeoutMs / 1000} s; the files are too large or too complex`,
      );
    if (e.code === 'ERR_WORKER_OUT_OF_MEMORY')
      return refusal(
        files,
        `validation needed more than ${this.options.memoryMb} MiB of memory; the files are too large`,
      );
    if (e.message === 'Task queue is at limit')
      throw new AppError('resource_unavailable', 'too many factory validations are waiting; retry shortly', {
        headers: { 'retry-after': '1' },
      });
    throw err;
  }

  async close(): Promise<void> {
    await Promise.all([this.#lanes.requests.close({ force: true }), this.#lanes.applies.close({ force: true })]);
  }
}

/** The abort reason of a request that waited too long for a thread. */
class QueueWaitExceeded extends Error {
  constructor() {
    super('waited too long for a validation thread');
    this.name = 'AbortError';
  }
}

async function answer(port: MessageChannel['port1'], question: ContextQuestion, context: PoolContext): Promise<void> {
  let reply: ContextAnswer;
  try {
    if (question.ask === 'resolveNames') {
      const found = context.resolveNames
        ? await context.resolveNames(question.provider, question.field, question.names)
        : new Map<string, string[]>();
      reply = { id: question.id, answer: [...found] };
    } else {
      const check = context[question.ask];
      reply = { id: question.id, answer: check ? (await check(question.name)) === true : false };
    }
  } catch (err) {
    reply = { id: question.id, error: err instanceof Error ? err.message : String(err) };
  }
  try {
    port.postMessage(reply);
  } catch {
    // The job ended (timed out) meanwhile: nobody waits for the answer.
  }
}

/**
 * The pool's budgets from a server's configuration (AGENTYARD_VALIDATION_TIMEOUT_MS, AGENTYARD_VALIDATION_MEMORY_MB,
 * AGENTYARD_VALIDATION_QUEUE_WAIT_MS).
 */
export function poolOptionsFor(config: {
  validationTimeoutMs: number;
  validationMemoryMb: number;
  validationQueueWaitMs: number;
}): DefinitionPoolOptions {
  return {
    timeoutMs: config.validationTimeoutMs,
    memoryMb: config.validationMemoryMb,
    queueWaitMs: config.validationQueueWaitMs,
  };
}
