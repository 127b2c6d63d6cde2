/**
 * The senders a webhook or provider connection is refusing for failed authentications (429), for the API to
 * show. IngressLimiters holds the same blocks to refuse requests; this board only listens to the bus's
 * announcements of them (every process hears every block, whichever process counted the last failure), so an
 * API process without the ingress role knows them too. Like the limiters' own, it is memory: a process
 * started after a block was announced does not know of it.
 */
import type { Bus } from '../kernel/bus.ts';
import { AUTH_BUDGET_EXHAUSTED_TOPIC } from '../kernel/topics.ts';
import type { IngressLimits } from './limits.ts';

export interface AuthLockout {
  /** The sender's address, as the ingress saw it (empty when it had none). */
  sender_ip: string;
  /** When the sender is let in again (the failed-authentication window's end). */
  until: string;
  /** Why, in a sentence. */
  reason: string;
}

/** Blocks kept before the ended ones are forgotten. */
const KEPT = 10_000;

export class AuthLockouts {
  readonly #blocked = new Map<string, number>();
  readonly #limits: Pick<IngressLimits, 'failedAuthPoints' | 'failedAuthWindowSeconds'>;
  readonly #now: () => number;
  #unsubscribe: (() => void) | undefined;

  constructor(limits: Pick<IngressLimits, 'failedAuthPoints' | 'failedAuthWindowSeconds'>, now = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  start(bus: Bus): void {
    this.#unsubscribe ??= bus.subscribe(AUTH_BUDGET_EXHAUSTED_TOPIC, (data) => {
      const { key, until } = (data ?? {}) as { key?: unknown; until?: unknown };
      if (typeof key === 'string' && typeof until === 'number') this.#record(key, until);
    });
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /** The senders locked out of one log (a webhook's UID or a connection's ID) now, the latest end first. */
  of(logUid: string): AuthLockout[] {
    const now = this.#now();
    const prefix = `${logUid}|`;
    const out: { ip: string; until: number }[] = [];
    for (const [key, until] of this.#blocked) {
      if (until > now && key.startsWith(prefix)) out.push({ ip: key.slice(prefix.length), until });
    }
    const { failedAuthPoints: points, failedAuthWindowSeconds: window } = this.#limits;
    return out
      .sort((a, b) => b.until - a.until)
      .map(({ ip, until }) => ({
        sender_ip: ip,
        until: new Date(until).toISOString(),
        reason: `${points} failed authentications from this address within ${window} s: every request from it answers 429 until then`,
      }));
  }

  #record(key: string, until: number): void {
    if ((this.#blocked.get(key) ?? 0) < until) this.#blocked.set(key, until);
    if (this.#blocked.size > KEPT) {
      const now = this.#now();
      for (const [k, u] of this.#blocked) if (u <= now) this.#blocked.delete(k);
    }
  }
}
