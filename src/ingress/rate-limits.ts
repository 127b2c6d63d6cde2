import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Bus } from '../store/bus.ts';
import type { Db, SqlValue } from '../store/db.ts';
import type { IngressLimits } from './limits.ts';

/** The table of migration 0020; counters shared by every process on one PostgreSQL server. */
const TABLE = 'webhook_rate_limits';

/** Published when a sender's failed-authentication budget runs out: `{key, until}` (epoch ms). */
export const AUTH_BUDGET_EXHAUSTED_TOPIC = 'webhooks.auth_budget_exhausted';

/**
 * The two budgets of the ingress, each per (webhook, sender IP): deliveries per window, and failed
 * authentications. On PostgreSQL both counters live in the database, so they hold across ingress
 * processes; the embedded engine serves one process and counts in memory.
 *
 * Deliveries are counted in groups: the requests for one sender that arrive in the same turn of the event
 * loop spend their points in ONE call (`consume(key, n)`, one round trip on PostgreSQL), and the first ones
 * that fit the budget pass, in arrival order, exactly as n separate calls would decide.
 *
 * Failed authentications are counted in the shared store but checked from memory: the process whose
 * failure spends the last point of a budget announces the block on the bus, and every process refuses
 * that sender until the window ends. A delivery therefore costs at most one counter round trip, not two.
 */
export class IngressLimiters {
  readonly #deliveries: RateLimiterAbstract;
  readonly #failedAuth: RateLimiterAbstract;
  readonly #failedAuthPoints: number;
  readonly #deliveryPoints: number;
  readonly #bus: Bus;
  #waiting = new Map<string, ((wait: number | undefined) => void)[]>();
  #scheduled = false;
  readonly #blocked = new Map<string, number>();
  readonly #unsubscribe: () => void;

  constructor(db: Db, bus: Bus, limits: IngressLimits) {
    this.#bus = bus;
    this.#failedAuthPoints = limits.failedAuthPoints;
    this.#deliveryPoints = limits.senderPoints;
    this.#deliveries = limiter(db, 'dlv', limits.senderPoints, limits.senderWindowSeconds);
    this.#failedAuth = limiter(db, 'auth', limits.failedAuthPoints, limits.failedAuthWindowSeconds);
    this.#unsubscribe = bus.subscribe(AUTH_BUDGET_EXHAUSTED_TOPIC, (data) => {
      const { key, until } = (data ?? {}) as { key?: unknown; until?: unknown };
      if (typeof key === 'string' && typeof until === 'number') this.#block(key, until);
    });
  }

  stop(): void {
    this.#unsubscribe();
  }

  /** Spends one delivery; undefined when allowed, else the seconds to wait before the next is allowed. */
  consumeDelivery(key: string): Promise<number | undefined> {
    return new Promise((resolve) => {
      const waiters = this.#waiting.get(key);
      if (waiters) waiters.push(resolve);
      else this.#waiting.set(key, [resolve]);
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        const groups = this.#waiting;
        this.#waiting = new Map();
        for (const [k, group] of groups) {
          void this.#consumeGroup(k, group.length).then((waits) => group.forEach((done, i) => done(waits[i])));
        }
      });
    });
  }

  async #consumeGroup(key: string, n: number): Promise<(number | undefined)[]> {
    let res: RateLimiterRes;
    try {
      await this.#deliveries.consume(key, n);
      return new Array<undefined>(n).fill(undefined);
    } catch (err) {
      // An Error (not a RateLimiterRes) means the store and its insurance both failed: let them through.
      if (!(err instanceof RateLimiterRes)) return new Array<undefined>(n).fill(undefined);
      res = err;
    }
    // consumedPoints is the total after this group; fewer than n means the key was refused without counting
    // (blocked in memory), and none of the group fits.
    const before = res.consumedPoints - n;
    const fit = res.consumedPoints < n ? 0 : Math.max(0, Math.min(n, this.#deliveryPoints - before));
    const wait = seconds(res.msBeforeNext);
    return Array.from({ length: n }, (_, i) => (i < fit ? undefined : wait));
  }

  /** Undefined while the sender's failed-authentication budget lasts, else the seconds until it refills. */
  failedAuthBlocked(key: string, now = Date.now()): number | undefined {
    const until = this.#blocked.get(key);
    if (until === undefined) return undefined;
    if (until <= now) {
      this.#blocked.delete(key);
      return undefined;
    }
    return seconds(until - now);
  }

  /** Spends one point of the sender's failed-authentication budget; the last point blocks it everywhere. */
  async spendFailedAuth(key: string): Promise<void> {
    let res: RateLimiterRes;
    try {
      res = await this.#failedAuth.consume(key);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) return;
      res = err;
    }
    if (res.consumedPoints < this.#failedAuthPoints) return;
    const until = Date.now() + res.msBeforeNext;
    this.#block(key, until);
    await this.#bus.publish(AUTH_BUDGET_EXHAUSTED_TOPIC, { key, until }).catch(() => {});
  }

  #block(key: string, until: number): void {
    if ((this.#blocked.get(key) ?? 0) < until) this.#blocked.set(key, until);
    // Forget expired blocks now and then, so that the map stays as small as the set of blocked senders.
    if (this.#blocked.size > 10_000) {
      const now = Date.now();
      for (const [k, u] of this.#blocked) if (u <= now) this.#blocked.delete(k);
    }
  }
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

function limiter(db: Db, keyPrefix: string, points: number, duration: number): RateLimiterAbstract {
  if (db.engine !== 'postgres') return new RateLimiterMemory({ keyPrefix, points, duration });
  return new RateLimiterPostgres({
    // rate-limiter-flexible speaks `query({text, values})`; our Db speaks `query(text, values)`.
    storeClient: { query: (q: { text: string; values?: unknown[] }) => db.query(q.text, (q.values ?? []) as SqlValue[]) },
    storeType: 'client',
    tableName: TABLE,
    tableCreated: true,
    keyPrefix,
    points,
    duration,
    // A sender already over its budget is answered from memory, without a round trip.
    inMemoryBlockOnConsumed: points + 1,
    // If the database is unreachable, count in this process rather than refuse every delivery.
    insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
  });
}
