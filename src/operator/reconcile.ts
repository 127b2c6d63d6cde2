import type { Logger } from '../kernel/log.ts';
import type { WorkQueue } from '../kernel/work-queue.ts';

/** What a reconcile asks of the loop: look again after a delay (a poll, a wait for something external). */
export interface Result {
  requeueAfterMs?: number;
}

/** A failure no retry fixes (an invalid spec): it is reported once and never retried until the object changes. */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export type ReconcileFn = (key: string, signal: AbortSignal) => Promise<Result | void>;

export interface WorkerOptions {
  name: string;
  queue: WorkQueue;
  reconcile: ReconcileFn;
  concurrency: number;
  signal: AbortSignal;
  log: Logger;
  /** Called after every reconcile with its duration and outcome (metrics). */
  observe?: (outcome: 'success' | 'error' | 'terminal', seconds: number) => void;
}

/**
 * Runs `concurrency` workers over the queue until the signal aborts, then waits for the reconciles in
 * progress. A thrown error is retried with the queue's backoff; a TerminalError is not; a Result with
 * `requeueAfterMs` queues the key again after that delay.
 */
export async function runWorkers(options: WorkerOptions): Promise<void> {
  const { queue, signal, log } = options;
  const onAbort = (): void => queue.shutDown();
  if (signal.aborted) queue.shutDown();
  else signal.addEventListener('abort', onAbort, { once: true });
  const reconcile = async (key: string): Promise<void> => {
    const started = performance.now();
    try {
      const result = await options.reconcile(key, signal);
      queue.forget(key);
      options.observe?.('success', (performance.now() - started) / 1000);
      if (result?.requeueAfterMs !== undefined && !signal.aborted) queue.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      if (err instanceof TerminalError) {
        queue.forget(key);
        options.observe?.('terminal', (performance.now() - started) / 1000);
        log.warn(
          { controller: options.name, key, err: err.message },
          `${options.name} ${key}: ${err.message} (not retried)`,
        );
      } else {
        options.observe?.('error', (performance.now() - started) / 1000);
        if (signal.aborted) return;
        const delay = queue.addRateLimited(key);
        log.warn(
          { controller: options.name, key, err, retryInMs: delay },
          `${options.name} ${key}: reconcile failed; retrying in ${delay} ms`,
        );
      }
    }
  };
  try {
    await queue.process(reconcile, options.concurrency);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
