/**
 * One pass at a time over work that others announce: a request while a pass runs asks for exactly one more
 * pass after it, however many requests came meanwhile (nothing announced during a pass is missed, and a burst of
 * announcements costs one pass). Used by the executors' and the Job executor's dispatch, the worker hub's
 * assignments, and DrainLoop (the outbox evaluator, the integration jobs).
 */
export class CoalescedPass {
  readonly #pass: () => Promise<void>;
  readonly #canRun: () => boolean;
  #running: Promise<void> | undefined;
  #again = false;

  /**
   * `pass` handles its own errors (it must not reject); `canRun` is asked before every pass, so that a stopped
   * owner starts no more.
   */
  constructor(pass: () => Promise<void>, canRun: () => boolean = () => true) {
    this.#pass = pass;
    this.#canRun = canRun;
  }

  /** Runs a pass now, or once more after the one under way. */
  request(): void {
    if (!this.#canRun()) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#pass().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.request();
      }
    });
  }

  /** Resolves once no pass runs (including the passes asked for meanwhile, while `canRun` allows them). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }
}
