/**
 * Lists a page shows beside its subject (the factories of the runs filter, a webhook's factory and automations),
 * kept per session for a few seconds so that paging through runs or deliveries does not read them again. The
 * session's own form posts forget its entries, so a change made in the console shows on the next page.
 */
export class LookupCache {
  readonly #entries = new Map<string, { at: number; value: Promise<unknown> }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { ttlMs?: number; maxEntries?: number; now?: () => number } = {}) {
    this.#ttlMs = options.ttlMs ?? 10_000;
    this.#maxEntries = options.maxEntries ?? 2_000;
    this.#now = options.now ?? Date.now;
  }

  /** The cached value of `name` for the session, or `load()`'s (a failed load is not kept). */
  get<T>(session: string, name: string, load: () => Promise<T>): Promise<T> {
    const key = `${session}\u0000${name}`;
    const now = this.#now();
    const hit = this.#entries.get(key);
    if (hit && now - hit.at < this.#ttlMs) return hit.value as Promise<T>;
    if (hit) this.#entries.delete(key);
    const value = load();
    this.#entries.set(key, { at: now, value });
    value.catch(() => {
      if (this.#entries.get(key)?.value === value) this.#entries.delete(key);
    });
    // Oldest first: Map keeps insertion order.
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
    return value;
  }

  /** Forgets every entry of the session. */
  forget(session: string): void {
    const prefix = `${session}\u0000`;
    for (const key of this.#entries.keys()) if (key.startsWith(prefix)) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
