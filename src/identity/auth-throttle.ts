import { RateLimiterMemory } from 'rate-limiter-flexible';
import { clientKey } from '../kernel/client-address.ts';
import { AppError } from '../kernel/errors.ts';

/**
 * Failed API-key attempts per client address: past `failures` in a window of `windowSeconds`, every attempt
 * from that address (a right key included) answers 429 `rate_limited` with `Retry-After` until the window
 * ends; other addresses are not affected. IPv6 clients are counted per /64, which one host usually holds
 * whole. Counted in this process's memory, like the validation budget: a refusal costs no database trip.
 */
export class AuthThrottle {
  readonly #limiter: RateLimiterMemory | undefined;
  readonly #failures: number;
  readonly #windowSeconds: number;

  /** `failures` 0 turns the throttle off. */
  constructor(failures: number, windowSeconds = 60) {
    this.#failures = failures;
    this.#windowSeconds = windowSeconds;
    this.#limiter =
      failures > 0
        ? new RateLimiterMemory({ keyPrefix: 'auth', points: failures, duration: windowSeconds })
        : undefined;
  }

  /** Throws `rate_limited` when `address` has used up its failures. */
  async refuseIfBlocked(address: string): Promise<void> {
    if (!this.#limiter) return;
    const state = await this.#limiter.get(clientKey(address));
    if (state && state.consumedPoints >= this.#failures) throw this.#refusal(state.msBeforeNext);
  }

  /** Counts one failed attempt from `address`. */
  async failed(address: string): Promise<void> {
    if (!this.#limiter) return;
    await this.#limiter.penalty(clientKey(address), 1);
  }

  #refusal(msBeforeNext: number): AppError {
    const wait = Math.max(1, Math.ceil(msBeforeNext / 1000));
    return new AppError(
      'rate_limited',
      `more than ${this.#failures} failed API-key attempts in ${this.#windowSeconds} s from this address; retry in ${wait} s`,
      { headers: { 'retry-after': String(wait) } },
    );
  }
}
