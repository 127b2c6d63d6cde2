import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { clientKey } from '../kernel/client-address.ts';
import { AppError } from '../kernel/errors.ts';

/**
 * The per-client budget of a public, CPU-bound endpoint (dry-run validation): `points` requests per window
 * from one client address (IPv6: one /64), then 429 `rate_limited` with `Retry-After` until the window ends. Counted in this
 * process's memory, unlike the ingress's shared counters: what the budget protects is this process's CPU,
 * and refusing a request should not cost a database round trip.
 */
export class ClientRateLimit {
  readonly #limiter: RateLimiterMemory | undefined;
  readonly #points: number;
  readonly #windowSeconds: number;

  /** `points` 0 turns the limit off. */
  constructor(keyPrefix: string, points: number, windowSeconds: number) {
    this.#points = points;
    this.#windowSeconds = windowSeconds;
    this.#limiter = points > 0 ? new RateLimiterMemory({ keyPrefix, points, duration: windowSeconds }) : undefined;
  }

  /** Spends one request of the client's budget, or throws `rate_limited` saying when to retry. */
  async consume(client: string): Promise<void> {
    if (!this.#limiter) return;
    try {
      await this.#limiter.consume(clientKey(client));
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const wait = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new AppError(
        'rate_limited',
        `more than ${this.#points} requests per ${this.#windowSeconds} s from this client; retry in ${wait} s`,
        {
          headers: { 'retry-after': String(wait) },
        },
      );
    }
  }
}
