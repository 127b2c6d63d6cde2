import { availableParallelism } from 'node:os';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { AppError } from '../kernel/errors.ts';
import type { DeploymentNotes } from './context.ts';
import type { FactoryFileInput } from './load.ts';
import type { ValidationResult } from './validate.ts';
import type {
  ContextSnapshot,
  SecretAnswer,
  SecretQuestion,
  TaskOutcome,
  ValidateTask,
  WorkerMessage,
} from './validate-worker.ts';
import { SCHEMA_VERSION } from './schemas.ts';

/** What a validation in the pool may know about live state; the secret questions are answered on this thread. */
export interface PoolContext {
  secretExists?(name: string): boolean | Promise<boolean>;
  secretIsUrlSafe?(name: string): boolean | Promise<boolean>;
  /** UIDs of the factory's webhooks (ValidationContext.knownWebhookUids). */
  knownWebhookUids?: ReadonlySet<string>;
  /** Team runners that exist outside the tree. */
  teamRunners?: ReadonlySet<string>;
  /** The deployment's model catalogue (ValidationContext.models). */
  models?: { ids: ReadonlySet<string>; closed: boolean };
  deploymentNotes?: DeploymentNotes;
}

export interface DefinitionPoolOptions {
  /**
   * Longest a validation may run, from when its worker takes it (the wait for a worker and the worker's start are
   * not counted); the worker running it is terminated then.
   */
  timeoutMs: number;
  /** Heap of a worker (V8's old generation); a validation that needs more ends its worker. */
  memoryMb: number;
  /** Worker threads at most; defaults to one less than the CPUs, at least one. */
  threads?: number;
  /** Validations waiting for a thread at most; more are refused with `resource_unavailable`. */
  maxQueue?: number;
}

export const DEFAULT_POOL_OPTIONS: DefinitionPoolOptions = { timeoutMs: 10_000, memoryMb: 256 };

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
    ...(context.knownWebhookUids ? { knownWebhookUids: [...context.knownWebhookUids] } : {}),
    ...(context.teamRunners ? { teamRunners: [...context.teamRunners] } : {}),
    ...(context.deploymentNotes ? { deploymentNotes: context.deploymentNotes } : {}),
    ...(context.models ? { models: { ids: [...context.models.ids], closed: context.models.closed } } : {}),
    ...(context.secretExists || context.secretIsUrlSafe ? { secrets: true } : {}),
  };
}

/**
 * Parses and validates factory trees on worker threads, so that a hostile tree (deep nesting, huge files)
 * costs a worker, never the event loop: each job has a time and a heap budget and answers a
 * `FF_LIMIT_EXCEEDED` diagnostic when it runs out of either.
 */
export class DefinitionPool {
  readonly options: DefinitionPoolOptions;
  readonly #pool: Piscina<ValidateTask, TaskOutcome>;

  constructor(options: DefinitionPoolOptions = DEFAULT_POOL_OPTIONS) {
    this.options = options;
    const threads = options.threads ?? Math.max(1, availableParallelism() - 1);
    this.#pool = new Piscina({
      filename: new URL('./validate-worker.ts', import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: 60_000,
      maxQueue: options.maxQueue ?? threads * 32,
      resourceLimits: { maxOldGenerationSizeMb: options.memoryMb, maxYoungGenerationSizeMb: 16 },
      // Below the event loop's priority: on a busy machine, webhooks and the API go first.
      niceIncrement: 10,
    });
    // A worker that dies outside a job (out of memory while starting) is replaced; its job's own failure answers.
    this.#pool.on('error', () => {});
  }

  async validate(files: readonly FactoryFileInput[], context?: PoolContext): Promise<ValidationResult> {
    const outcome = await this.#run({ files: files.map((f) => ({ ...f })) }, files, context);
    if ('problem' in outcome) throw new Error(outcome.problem.detail);
    return outcome.result;
  }

  /**
   * A validate request's JSON body, parsed, checked against the request caps and validated on a worker: the
   * event loop only copies the bytes. Answers the result, or the problem that refuses the request.
   */
  validateRequest(body: Buffer, context?: PoolContext): Promise<TaskOutcome> {
    const copy = new Uint8Array(body.length);
    copy.set(body);
    return this.#run({ body: copy }, [], context, [copy.buffer]);
  }

  async #run(
    task: ValidateTask,
    files: readonly FactoryFileInput[],
    context: PoolContext | undefined,
    transfer: ArrayBuffer[] = [],
  ): Promise<TaskOutcome> {
    // The worker says when it takes the job (and asks the secret questions) over this channel.
    const channel = new MessageChannel();
    const port = channel.port1;
    task.port = channel.port2;
    if (context) task.context = snapshotOf(context);
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    port.on('message', (message: WorkerMessage) => {
      if ('started' in message) timer ??= setTimeout(() => abort.abort(), this.options.timeoutMs);
      else if (context) void answer(port, message, context);
    });
    try {
      return await this.#pool.run(task, { signal: abort.signal, transferList: [...transfer, channel.port2] });
    } catch (err) {
      return { result: this.#failed(files, err) };
    } finally {
      clearTimeout(timer);
      port.close();
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

  close(): Promise<void> {
    return this.#pool.close({ force: true });
  }
}

async function answer(port: MessageChannel['port1'], question: SecretQuestion, context: PoolContext): Promise<void> {
  let reply: SecretAnswer;
  try {
    const check = context[question.ask];
    reply = { id: question.id, answer: check ? await check(question.name) : false };
  } catch (err) {
    reply = { id: question.id, error: err instanceof Error ? err.message : String(err) };
  }
  try {
    port.postMessage(reply);
  } catch {
    // The job ended (timed out) meanwhile: nobody waits for the answer.
  }
}

/** The pool's budgets from a server's configuration (AGENTYARD_VALIDATION_TIMEOUT_MS, AGENTYARD_VALIDATION_MEMORY_MB). */
export function poolOptionsFor(config: {
  validationTimeoutMs: number;
  validationMemoryMb: number;
}): DefinitionPoolOptions {
  return { timeoutMs: config.validationTimeoutMs, memoryMb: config.validationMemoryMb };
}
