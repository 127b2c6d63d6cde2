import type { AgentEvent } from './assignment.ts';
import { SerialQueue } from '../kernel/loop.ts';

/**
 * Batches an execution's events and writes them one batch at a time, in order: events reported in one tick
 * go out together, and `drain()` resolves once everything pushed so far is written.
 */
export class EventPipe {
  readonly #write: (events: AgentEvent[]) => Promise<void>;
  readonly #onError: (err: unknown) => void;
  #pending: AgentEvent[] = [];
  #scheduled = false;
  readonly #queue = new SerialQueue();

  constructor(write: (events: AgentEvent[]) => Promise<void>, onError: (err: unknown) => void) {
    this.#write = write;
    this.#onError = onError;
  }

  push(events: readonly AgentEvent[]): void {
    if (events.length === 0) return;
    this.#pending.push(...events.map((e) => ({ ...e, at: e.at ?? new Date().toISOString() })));
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => void this.#flush());
  }

  #flush(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length > 0) void this.#queue.run(() => this.#write(batch)).catch(this.#onError);
    return this.#queue.settled();
  }

  drain(): Promise<void> {
    return this.#flush();
  }
}
