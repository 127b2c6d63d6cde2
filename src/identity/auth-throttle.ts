import { RateLimiterMemory } from 'rate-limiter-flexible';
import { clientKey } from '../kernel/client-address.ts';
import { AppError } from '../kernel/errors.ts';

/**
 * Failed API-key (and worker-token) attempts per client address: past `failures` in a window of `windowSeconds`, every attempt
 * from that address answers 429 `rate_limited` with `Retry-After` until the window ends, unchecked (so a
 * guess is never answered), except with a key that authenticated in the last hour (see Authenticator: people
 * behind the same proxy or NAT as a guesser keep working); other addresses are not affected. IPv6 clients are counted per /64, which one host usually holds
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

  /** The `rate_limited` refusal when `address` has used up its failures; undefined while it has not. */
  async blocked(address: string): Promise<AppError | undefined> {
    if (!this.#limiter) return undefined;
    const state = await this.#limiter.get(clientKey(address));
    return state && state.consumedPoints >= this.#failures ? this.#refusal(state.msBeforeNext) : undefined;
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
      `more than ${this.#failures} failed API-key or worker-token attempts in ${this.#windowSeconds} s from this address; retry in ${wait} s`,
      { headers: { 'retry-after': String(wait) } },
    );
  }
}
