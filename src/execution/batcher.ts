/**
 * Group commit: calls made in the same turn (and while a batch is being written) are written together by one
 * `flush`, one batch at a time; each caller gets its own answer. With many executions at once this turns a
 * transaction per call into a transaction per batch.
 */
export class Batcher<I, O> {
  readonly #flush: (items: I[]) => Promise<O[]>;
  readonly #max: number;
  #pending: { item: I; resolve: (o: O) => void; reject: (err: unknown) => void }[] = [];
  #scheduled = false;
  #running = false;

  constructor(flush: (items: I[]) => Promise<O[]>, maxBatch = 200) {
    this.#flush = flush;
    this.#max = maxBatch;
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#running) return;
    this.#scheduled = true;
    // the calls of this turn go together; calls made while a batch is being written form the next one
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#run();
    });
  }

  async #run(): Promise<void> {
    if (this.#running || this.#pending.length === 0) return;
    this.#running = true;
    const batch = this.#pending.splice(0, this.#max);
    try {
      const out = await this.#flush(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(out[i]!));
    } catch (err) {
      for (const b of batch) b.reject(err);
    } finally {
      this.#running = false;
      if (this.#pending.length > 0) this.#schedule();
    }
  }
}

/** Runs `fn` again (a few times) when PostgreSQL chose it as a deadlock victim or failed it on serialization. */
export async function retryOnConflict<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= attempts || (code !== '40P01' && code !== '40001')) throw err;
    }
  }
}
