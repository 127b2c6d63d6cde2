import type { Queryable } from '../kernel/db.ts';
import { ping } from './sql.ts';

/** A readiness check: undefined when ready, else why not (shown in the /readyz answer). */
export type ReadinessCheck = () => Promise<string | undefined> | string | undefined;

const DATABASE_TIMEOUT_MS = 2_000;

/** The checks /readyz runs: the database answers, and every check added (the operator adds "informers synced"). */
export class ReadinessChecks {
  readonly #db: Queryable;
  readonly #checks = new Map<string, ReadinessCheck>();

  constructor(db: Queryable) {
    this.#db = db;
  }

  /** Adds a check; returns its removal. */
  add(name: string, check: ReadinessCheck): () => void {
    this.#checks.set(name, check);
    return () => {
      if (this.#checks.get(name) === check) this.#checks.delete(name);
    };
  }

  /** Runs every check; `ready` only when all pass. */
  async run(): Promise<{ ready: boolean; checks: Record<string, string> }> {
    const results: Record<string, string> = {};
    const entries: [string, ReadinessCheck][] = [['database', () => this.#database()], ...this.#checks];
    await Promise.all(
      entries.map(async ([name, check]) => {
        try {
          results[name] = (await check()) ?? 'ok';
        } catch (err) {
          results[name] = err instanceof Error ? err.message : String(err);
        }
      }),
    );
    return { ready: Object.values(results).every((r) => r === 'ok'), checks: results };
  }

  async #database(): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ping(this.#db),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${DATABASE_TIMEOUT_MS} ms`)),
            DATABASE_TIMEOUT_MS,
          );
        }),
      ]);
      return undefined;
    } catch (err) {
      return `database unreachable: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      clearTimeout(timer);
    }
  }
}
