/**
 * Run tokens this process has checked for a dispatch, by hash, with what cannot change while their execution runs:
 * the run, its team, factory and execution, and its place in its tree (depth, root, the root's creation). A hit
 * spares a dispatch the token's own statement; it is never trusted alone: the child's insert checks that the token
 * is still live, the limits and the factory's version (`dispatchGuard`, functions.sql), and anything refused is
 * answered only after a full check (service.ts). So a token whose execution ended is refused at once, cached or not.
 */
import type { RunTokenHolder } from '../execution/run-token.ts';
import type { FactoryCaller } from './service.ts';

/** Entries kept before the cache starts again (a process serves far fewer live executions). */
const MAX_ENTRIES = 10_000;

export class DispatchTokenCache {
  readonly #entries = new Map<string, RunTokenHolder & { dispatch: NonNullable<RunTokenHolder['dispatch']> }>();

  /** Keeps a holder read with its dispatch facts (the counts are not kept: the insert checks them). */
  remember(tokenHash: string, holder: RunTokenHolder): void {
    if (!holder.dispatch) return;
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(tokenHash, { ...holder, dispatch: holder.dispatch });
  }

  /** The caller a dispatch with this token would have, unchecked (`guard`), or undefined. */
  caller(tokenHash: string): Extract<FactoryCaller, { kind: 'run' }> | undefined {
    const held = this.#entries.get(tokenHash);
    if (!held) return undefined;
    return {
      kind: 'run',
      ...held,
      // the counts are the insert's to check
      dispatch: { ...held.dispatch, facts: { ...held.dispatch.facts, children: 0, active: 0 } },
      guard: { tokenHash },
    };
  }

  forget(tokenHash: string): void {
    this.#entries.delete(tokenHash);
  }
}
