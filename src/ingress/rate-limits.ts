import { AUTH_BUDGET_EXHAUSTED_TOPIC } from '../kernel/topics.ts';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Bus } from '../kernel/bus.ts';
import type { Db, SqlValue } from '../kernel/db.ts';
import type { IngressLimits } from './limits.ts';

/** The table of migration 0020; counters shared by every process on one PostgreSQL server. */
const TABLE = 'webhook_rate_limits';

/** What this process knows of one sender's delivery budget, and what it has not yet counted in the store. */
interface SenderBudget {
  /** Points left in the window by the last count, less the deliveries admitted on that estimate since. */
  left: number;
  /** When the window of the last count ends (epoch ms); 0 when there is no count to go by. */
  resetsAt: number;
  /** Deliveries admitted on the estimate and not yet counted in the store. */
  admitted: number;
  /** Deliveries admitted on the estimate that the count in flight carries. */
  inFlight: number;
  /** Deliveries waiting for the store's count to decide them, in arrival order. */
  waiting: ((wait: number | undefined) => void)[];
  /** A count for this sender is in flight; the next one waits for it, so that counts are never reordered. */
  counting: boolean;
  /** When the last count was sent (epoch ms). */
  countedAt: number;
  /** A count of deliveries admitted on the estimate, due once COUNT_INTERVAL_MS has passed since the last. */
  due: NodeJS.Timeout | undefined;
  /** When the last count came back (epoch ms) and the points it found spent in the window, by every process. */
  lastCount: { at: number; spent: number } | undefined;
  /** Counts may wait COUNT_INTERVAL_MS: all processes together spend far less than the margin in that time. */
  lazy: boolean;
}

/**
 * The shortest time between two counts of a sender whose deliveries were all admitted on the estimate, when its
 * budget is LAZY_COUNT_MIN_POINTS or more, more than half of it is left, and all processes together spend less
 * than half its margin in that time (by its last two counts). Without it a busy sender kept one count in flight
 * at all times, an upsert for every round trip (on PostgreSQL about as many statements as the delivery groups
 * themselves). A sender that spends faster, relative to its budget, is counted a round trip apart as before, so
 * that what other processes admit shows at once; a delivery that has to wait for the store is counted at once.
 */
export const COUNT_INTERVAL_MS = 50;

/**
 * The smallest budget whose counts may wait COUNT_INTERVAL_MS. Only a sender with a large budget can send fast
 * for long (a small one is soon refused from memory), and its margin, a quarter of the budget, is then large
 * against what other processes admit in 50 ms: a budget of 60 a minute is counted a round trip apart always.
 */
export const LAZY_COUNT_MIN_POINTS = 1_000;

const ADMITTED: Promise<undefined> = Promise.resolve(undefined);

/** Budgets kept in memory before the ones whose window has ended are forgotten. */
const BUDGETS_KEPT = 10_000;

/**
 * A budget of deliveries per key per window, counted in groups (see IngressLimiters): the webhook ingress
 * keys it by (webhook, sender IP), provider events by connection.
 */
export class DeliveryBudgets {
  readonly #deliveries: RateLimiterAbstract;
  readonly #deliveryPoints: number;
  /** Points that must be left, by the estimate, for a delivery to be admitted without waiting for a count. */
  readonly #margin: number;
  /** Deliveries admitted on the estimate at most before a count of them comes back (half the margin). */
  readonly #unconfirmed: number;
  /** The budget is large enough for counts to wait COUNT_INTERVAL_MS (LAZY_COUNT_MIN_POINTS). */
  readonly #lazyCounts: boolean;
  readonly #budgets = new Map<string, SenderBudget>();
  /** The number of budgets at which the ended ones are next forgotten (grows with the senders still active). */
  #forgetAt = BUDGETS_KEPT;
  #uncounted = new Set<string>();
  #scheduled = false;

  constructor(db: Db, keyPrefix: string, points: number, windowSeconds: number) {
    this.#deliveryPoints = points;
    this.#margin = Math.ceil(points / 4);
    this.#unconfirmed = Math.floor(this.#margin / 2);
    this.#lazyCounts = points >= LAZY_COUNT_MIN_POINTS;
    this.#deliveries = limiter(db, keyPrefix, points, windowSeconds);
  }

  get points(): number {
    return this.#deliveryPoints;
  }

  stop(): void {
    for (const budget of this.#budgets.values()) if (budget.due) clearTimeout(budget.due);
  }

  /** Spends one delivery; undefined when allowed, else the seconds to wait before the next is allowed. */
  consume(key: string): Promise<number | undefined> {
    let budget = this.#budgets.get(key);
    if (!budget) {
      if (this.#budgets.size >= this.#forgetAt) {
        this.#forgetEnded();
        this.#forgetAt = Math.max(BUDGETS_KEPT, 2 * this.#budgets.size);
      }
      budget = {
        left: 0,
        resetsAt: 0,
        admitted: 0,
        inFlight: 0,
        waiting: [],
        counting: false,
        countedAt: 0,
        due: undefined,
        lastCount: undefined,
        lazy: false,
      };
      this.#budgets.set(key, budget);
    }
    const now = Date.now();
    if (
      budget.waiting.length === 0 &&
      budget.left > this.#margin &&
      budget.admitted + budget.inFlight < this.#unconfirmed &&
      now < budget.resetsAt
    ) {
      budget.left--;
      budget.admitted++;
      this.#countLater(key, budget, now);
      return ADMITTED;
    }
    this.#countNow(key, budget);
    const waiting = budget.waiting;
    return new Promise((resolve) => waiting.push(resolve));
  }

  /** Counts the sender's admitted deliveries COUNT_INTERVAL_MS after its last count (or after the one in flight). */
  #countLater(key: string, budget: SenderBudget, now: number): void {
    // Half the budget and more left: other processes' deliveries not yet counted cannot bring it near the limit
    // before every process counts a round trip apart again.
    if (!this.#lazyCounts || !budget.lazy || budget.left <= 2 * this.#margin) {
      this.#countNow(key, budget);
      return;
    }
    if (budget.due || budget.counting) return;
    budget.due = setTimeout(
      () => {
        budget.due = undefined;
        this.#countNow(key, budget);
      },
      Math.max(0, budget.countedAt + COUNT_INTERVAL_MS - now),
    );
    budget.due.unref();
  }

  /** Counts the sender in this turn of the event loop (after its count in flight, if any). */
  #countNow(key: string, budget: SenderBudget): void {
    if (budget.due) {
      clearTimeout(budget.due);
      budget.due = undefined;
    }
    this.#uncounted.add(key);
    this.#scheduleCount();
  }

  /** Sends the counts of this turn of the event loop: one call per sender, after its call in flight if any. */
  #scheduleCount(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const keys = this.#uncounted;
      this.#uncounted = new Set();
      for (const key of keys) {
        const budget = this.#budgets.get(key);
        if (budget && !budget.counting) void this.#count(key, budget);
      }
    });
  }

  async #count(key: string, budget: SenderBudget): Promise<void> {
    const admitted = budget.admitted;
    const waiting = budget.waiting;
    const n = admitted + waiting.length;
    if (n === 0) return;
    budget.admitted = 0;
    budget.inFlight = admitted;
    budget.waiting = [];
    budget.counting = true;
    budget.countedAt = Date.now();
    // Until the store answers, the estimate assumes the waiting all fit.
    budget.left -= waiting.length;
    let res: RateLimiterRes | undefined;
    try {
      res = await this.#deliveries.consume(key, n);
    } catch (err) {
      // An Error (not a RateLimiterRes) means the store and its insurance both failed: let them through.
      if (err instanceof RateLimiterRes) res = err;
    }
    if (res) {
      // consumedPoints is the total after this call; fewer than n means the key was refused without counting
      // (blocked in memory), and none of the waiting fits. The admitted were counted first.
      const blocked = res.consumedPoints < n;
      const before = res.consumedPoints - n;
      const fit = blocked ? 0 : Math.max(0, Math.min(waiting.length, this.#deliveryPoints - before - admitted));
      const wait = seconds(res.msBeforeNext);
      waiting.forEach((done, i) => done(i < fit ? undefined : wait));
      budget.left = blocked ? 0 : this.#deliveryPoints - res.consumedPoints - budget.admitted;
      const now = Date.now();
      budget.resetsAt = now + res.msBeforeNext;
      const last = budget.lastCount;
      budget.lastCount = { at: now, spent: res.consumedPoints };
      // points per COUNT_INTERVAL_MS spent since the last count, by every process (unknown across a window's end)
      const pace =
        last && res.consumedPoints >= last.spent && now > last.at
          ? ((res.consumedPoints - last.spent) * COUNT_INTERVAL_MS) / (now - last.at)
          : undefined;
      budget.lazy = !blocked && pace !== undefined && pace < this.#margin / 2;
    } else {
      for (const done of waiting) done(undefined);
      budget.resetsAt = 0;
      budget.lazy = false;
    }
    budget.counting = false;
    budget.inFlight = 0;
    if (budget.waiting.length > 0) this.#countNow(key, budget);
    else if (budget.admitted > 0) this.#countLater(key, budget, Date.now());
  }

  /** Drops the budgets whose window has ended and that have nothing in flight: the next count starts afresh. */
  #forgetEnded(): void {
    const now = Date.now();
    for (const [key, budget] of this.#budgets) {
      if (
        budget.resetsAt <= now &&
        !budget.counting &&
        !budget.due &&
        budget.admitted === 0 &&
        budget.waiting.length === 0
      )
        this.#budgets.delete(key);
    }
  }
}

/**
 * The two budgets of the ingress, each per (webhook, sender IP): deliveries per window, and failed
 * authentications. On PostgreSQL both counters live in the database, so they hold across ingress
 * processes; the embedded engine serves one process and counts in memory.
 *
 * Deliveries are counted in groups: the requests for one sender that arrive in the same turn of the event
 * loop spend their points in ONE call (`consume(key, n)`, one round trip on PostgreSQL), and the first ones
 * that fit the budget pass, in arrival order, exactly as n separate calls would decide. A sender with more
 * than a quarter of its budget left by the last count is admitted at once, on that count less what this
 * process admitted since, and counted in the next call: most senders never wait for the store. At most an
 * eighth of the budget is admitted so before a count of it comes back, so that a slow store does not leave a
 * process admitting on an old count. One call per sender is in flight at a time, so the store sees every point
 * in order. In one process the limit is exact; with several, a sender can pass it only if the other processes
 * admit more than a quarter of its budget between two counts of this one, and then by what this one admits
 * ahead of its counts.
 *
 * Failed authentications are counted in the shared store but checked from memory: the process whose
 * failure spends the last point of a budget announces the block on the bus, and every process refuses
 * that sender until the window ends. A delivery therefore costs at most one counter round trip, not two.
 */
export class IngressLimiters {
  readonly #deliveries: DeliveryBudgets;
  readonly #failedAuth: RateLimiterAbstract;
  readonly #failedAuthPoints: number;
  readonly #bus: Bus;
  readonly #blocked = new Map<string, number>();
  readonly #unsubscribe: () => void;

  constructor(db: Db, bus: Bus, limits: IngressLimits) {
    this.#bus = bus;
    this.#failedAuthPoints = limits.failedAuthPoints;
    this.#deliveries = new DeliveryBudgets(db, 'dlv', limits.senderPoints, limits.senderWindowSeconds);
    this.#failedAuth = limiter(db, 'auth', limits.failedAuthPoints, limits.failedAuthWindowSeconds);
    this.#unsubscribe = bus.subscribe(AUTH_BUDGET_EXHAUSTED_TOPIC, (data) => {
      const { key, until } = (data ?? {}) as { key?: unknown; until?: unknown };
      if (typeof key === 'string' && typeof until === 'number') this.#block(key, until);
    });
  }

  stop(): void {
    this.#unsubscribe();
    this.#deliveries.stop();
  }

  /** Spends one delivery; undefined when allowed, else the seconds to wait before the next is allowed. */
  consumeDelivery(key: string): Promise<number | undefined> {
    return this.#deliveries.consume(key);
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
    storeClient: {
      query: (q: { text: string; values?: unknown[] }) => db.query(q.text, (q.values ?? []) as SqlValue[]),
    },
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
