/**
 * Group commit: items handed over while a group is being written are written together by the next one, one
 * statement (or transaction) per group instead of per item (docs/decisions.md, "Group commit"). The caller's
 * `write` writes a group and settles its items; the policies it may differ in are options.
 */

/** An item of a group: whatever the caller waits on, which can be failed. */
export interface GroupItem {
  reject(err: unknown): void;
}

export interface GroupCommitOptions {
  /** Groups written at once (default 1: docs/decisions.md, "One batch in flight"). */
  maxInFlight?: number;
  /** The largest group (default 200), or a function read as each group forms. */
  maxGroup?: number | (() => number);
  /**
   * How an idle writer gathers a group: `turn` waits for the I/O of the current event-loop turn (setImmediate:
   * the requests read together go together, and a freed slot takes the waiting items at once); `microtasks`
   * waits only for the microtasks queued so far, also when a slot frees, so that the work a group's answers
   * hand over joins the next group.
   */
  gather?: 'turn' | 'microtasks';
  /**
   * When a group may be sent while another is still in flight (maxInFlight > 1): `any` (default) as soon as
   * an item waits; `full` only once a full group (maxGroup) waits. With `full` a second group overlaps the
   * first only when it would be as large as if it had waited, so the overlap never trades large groups for
   * small ones; otherwise it is sent when the group in flight releases.
   */
  overlap?: 'any' | 'full';
}

/**
 * Writes a group. Call `release` once the group needs the database no more, before answering its items, so that
 * the next group is already with the database while this thread answers (it is called anyway when `write`
 * settles). A rejection of `write` fails every item of the group that is not settled yet.
 */
export type WriteGroup<T> = (group: T[], release: () => void) => Promise<void>;

export class GroupCommit<T extends GroupItem> {
  readonly #write: WriteGroup<T>;
  readonly #maxInFlight: number;
  readonly #maxGroup: number | (() => number);
  readonly #gather: 'turn' | 'microtasks';
  readonly #overlap: 'any' | 'full';
  #queue: T[] = [];
  #inFlight = 0;
  #scheduled = false;
  #idle: (() => void)[] = [];

  constructor(write: WriteGroup<T>, options: GroupCommitOptions = {}) {
    this.#write = write;
    this.#maxInFlight = options.maxInFlight ?? 1;
    this.#maxGroup = options.maxGroup ?? 200;
    this.#gather = options.gather ?? 'turn';
    this.#overlap = options.overlap ?? 'any';
  }

  add(item: T): void {
    this.#queue.push(item);
    this.#schedule();
  }

  /** Resolves once everything handed over so far is written. */
  drain(): Promise<void> {
    if (this.#queue.length === 0 && this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    const pump = () => {
      this.#scheduled = false;
      this.#pump();
    };
    if (this.#gather === 'turn') setImmediate(pump);
    else queueMicrotask(pump);
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) {
      const size = Math.max(1, typeof this.#maxGroup === 'number' ? this.#maxGroup : this.#maxGroup());
      if (this.#inFlight > 0 && this.#overlap === 'full' && this.#queue.length < size) return;
      const group = this.#queue.splice(0, size);
      this.#inFlight++;
      void this.#run(group);
    }
  }

  async #run(group: T[]): Promise<void> {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#inFlight--;
      if (this.#gather === 'turn') this.#pump();
      else this.#schedule();
      if (this.#queue.length === 0 && this.#inFlight === 0) for (const done of this.#idle.splice(0)) done();
    };
    try {
      await this.#write(group, release);
    } catch (err) {
      // Settled promises ignore a later reject, so this fails only the items still waiting.
      for (const item of group) item.reject(err);
    } finally {
      release();
    }
  }
}

interface Waiting<I, O> {
  item: I;
  resolve(out: O): void;
  reject(err: unknown): void;
}

/**
 * The plain case: `flush` writes the items of a group and answers one result per item, in order; a failed
 * flush fails the whole group.
 */
export class Batcher<I, O> {
  readonly #core: GroupCommit<Waiting<I, O>>;

  constructor(flush: (items: I[]) => Promise<O[]>, options: GroupCommitOptions = {}) {
    this.#core = new GroupCommit<Waiting<I, O>>(async (group, release) => {
      const out = await flush(group.map((w) => w.item));
      for (let i = 0; i < group.length; i++) group[i]!.resolve(out[i]!);
      release();
    }, options);
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => this.#core.add({ item, resolve, reject }));
  }
}
