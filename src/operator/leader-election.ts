import type { CoordinationV1Api, V1Lease, V1LeaseSpec } from '@kubernetes/client-node';
import type { Logger } from '../kernel/log.ts';
import { apiMessage, isConflict, isNotFound, requestOptions } from './kube.ts';

/** Time for the elector; tests may inject one. `sleep` resolves early (never rejects) when the signal aborts. */
export interface ElectionClock {
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const SYSTEM_ELECTION_CLOCK: ElectionClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
};

export interface LeaderElectionOptions {
  namespace: string;
  leaseName: string;
  /** Unique per replica (the pod name plus a random suffix). */
  identity: string;
  /** How long a lease is valid without renewal; other candidates wait this long before taking it. */
  leaseDurationMs: number;
  /** How long the leader keeps trying to renew before it gives up leadership. */
  renewDeadlineMs: number;
  /** Wait between attempts to acquire or renew. */
  retryPeriodMs: number;
  /** Acquire attempts wait retryPeriod × (1 + random × jitter). */
  jitterFactor: number;
  log: Logger;
  clock?: ElectionClock;
}

export const DEFAULT_ELECTION = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  jitterFactor: 1.2,
} as const;

/**
 * client-go's rule: the lease must outlast the renew deadline, which must leave room for more than one
 * jittered retry; otherwise a leader could lose its lease while still believing it leads.
 */
export function validateElectionOptions(
  o: Pick<LeaderElectionOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs' | 'jitterFactor' | 'identity'>,
): void {
  if (!o.identity) throw new Error('leader election: identity must not be empty');
  if (!(o.retryPeriodMs > 0) || !(o.renewDeadlineMs > 0) || !(o.leaseDurationMs > 0))
    throw new Error('leader election: durations must be positive');
  if (!(o.jitterFactor >= 0)) throw new Error('leader election: jitter must not be negative');
  if (!(o.leaseDurationMs > o.renewDeadlineMs))
    throw new Error('leader election: leaseDuration must be greater than renewDeadline');
  if (!(o.renewDeadlineMs > o.jitterFactor * o.retryPeriodMs))
    throw new Error('leader election: renewDeadline must be greater than jitter × retryPeriod');
}

export interface LeadershipCallbacks {
  /** Runs while this replica leads; must return (controllers stopped) soon after `signal` aborts. */
  onStartedLeading(signal: AbortSignal): Promise<void>;
  onStoppedLeading?(): void;
  onNewLeader?(identity: string): void;
}

/** Why `run` returned: the caller's signal aborted, or the lease could not be renewed in time. */
export type ElectionEnd = 'cancelled' | 'lost';

/**
 * Lease times are MicroTime: the API server wants exactly six fractional digits, and client-node writes a
 * Date with three. A string passes its serializer untouched.
 */
function microTime(date: Date): Date {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;
}

function recordKey(spec: V1LeaseSpec | undefined): string {
  return JSON.stringify([
    spec?.holderIdentity ?? '',
    String(spec?.renewTime ?? ''),
    String(spec?.acquireTime ?? ''),
    spec?.leaseTransitions ?? 0,
    spec?.leaseDurationSeconds ?? 0,
  ]);
}

/**
 * Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection package (as ported
 * by kubenode). Expiry is judged by the time this replica last saw the lease record change, never by the
 * holder's clock. Every loop stops on the caller's AbortSignal; on cancel the controllers are awaited
 * before the lease is released, so two replicas never reconcile at once.
 */
export class LeaderElector {
  readonly #api: CoordinationV1Api;
  readonly #o: LeaderElectionOptions;
  readonly #clock: ElectionClock;
  #observed: V1Lease | undefined;
  #observedKey = '';
  #observedAt = 0;
  #leading = false;
  #reportedLeader: string | undefined;

  constructor(api: CoordinationV1Api, options: LeaderElectionOptions) {
    validateElectionOptions(options);
    this.#api = api;
    this.#o = options;
    this.#clock = options.clock ?? SYSTEM_ELECTION_CLOCK;
  }

  get identity(): string {
    return this.#o.identity;
  }

  isLeader(): boolean {
    return this.#leading;
  }

  /** The holder of the lease as last observed (undefined when none). */
  currentLeader(): string | undefined {
    return this.#observed?.spec?.holderIdentity || undefined;
  }

  async run(signal: AbortSignal, callbacks: LeadershipCallbacks): Promise<ElectionEnd> {
    if (!(await this.#acquire(signal, callbacks))) return 'cancelled';
    this.#leading = true;
    this.#o.log.info(
      { lease: `${this.#o.namespace}/${this.#o.leaseName}`, identity: this.#o.identity },
      'became the leader',
    );
    const leadership = new AbortController();
    const stopLeading = (): void => leadership.abort();
    signal.addEventListener('abort', stopLeading, { once: true });
    const leading = callbacks.onStartedLeading(leadership.signal).catch((err: unknown) => {
      this.#o.log.error({ err }, 'the leader work failed');
    });
    // Work that ends on its own (a crash) gives up the lease too.
    void leading.then(() => leadership.abort());
    try {
      // Returns when the leadership signal aborts (cancel, or the work ended) or a renewal misses its deadline.
      await this.#renewLoop(leadership.signal);
    } finally {
      leadership.abort();
      signal.removeEventListener('abort', stopLeading);
      await leading;
      this.#leading = false;
    }
    const end: ElectionEnd = signal.aborted ? 'cancelled' : 'lost';
    await this.#release();
    if (end === 'lost')
      this.#o.log.error({ identity: this.#o.identity }, 'leader election lost: stopped the controllers');
    callbacks.onStoppedLeading?.();
    return end;
  }

  async #acquire(signal: AbortSignal, callbacks: LeadershipCallbacks): Promise<boolean> {
    const { retryPeriodMs, jitterFactor } = this.#o;
    while (!signal.aborted) {
      const acquired = await this.#tryAcquireOrRenew(signal);
      const holder = this.currentLeader();
      if (holder && holder !== this.#reportedLeader) {
        this.#reportedLeader = holder;
        callbacks.onNewLeader?.(holder);
      }
      if (acquired) return true;
      await this.#clock.sleep(retryPeriodMs * (1 + Math.random() * jitterFactor), signal);
    }
    return false;
  }

  /** Renews every retryPeriod; answers false when one renewal cycle misses the renew deadline, true on cancel. */
  async #renewLoop(signal: AbortSignal): Promise<boolean> {
    const { retryPeriodMs, renewDeadlineMs } = this.#o;
    while (!signal.aborted) {
      await this.#clock.sleep(retryPeriodMs, signal);
      if (signal.aborted) return true;
      const deadline = this.#clock.now() + renewDeadlineMs;
      let renewed = false;
      while (!signal.aborted && this.#clock.now() < deadline) {
        const attempt = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, deadline - this.#clock.now()))]);
        if (await this.#tryAcquireOrRenew(attempt)) {
          renewed = true;
          break;
        }
        await this.#clock.sleep(Math.min(retryPeriodMs, Math.max(0, deadline - this.#clock.now())), signal);
      }
      if (signal.aborted) return true;
      if (!renewed) return false;
    }
    return true;
  }

  #observe(lease: V1Lease): void {
    const key = recordKey(lease.spec);
    if (key !== this.#observedKey) {
      this.#observedKey = key;
      this.#observedAt = this.#clock.now();
    }
    this.#observed = lease;
  }

  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const { namespace, leaseName: name, identity } = this.#o;
    const now = microTime(new Date(this.#clock.now()));
    const durationSeconds = Math.ceil(this.#o.leaseDurationMs / 1000);
    let lease: V1Lease;
    try {
      lease = await this.#api.readNamespacedLease({ name, namespace }, requestOptions({ signal }));
    } catch (err) {
      if (!isNotFound(err)) {
        this.#o.log.warn({ err: apiMessage(err) }, `leader election: cannot read lease ${namespace}/${name}`);
        return false;
      }
      try {
        const created = await this.#api.createNamespacedLease(
          {
            namespace,
            body: {
              metadata: { name, namespace, labels: { 'app.kubernetes.io/part-of': 'agentyard' } },
              spec: {
                holderIdentity: identity,
                leaseDurationSeconds: durationSeconds,
                acquireTime: now,
                renewTime: now,
                leaseTransitions: 0,
              },
            },
          },
          requestOptions({ signal }),
        );
        this.#observe(created);
        return true;
      } catch (createErr) {
        if (!isConflict(createErr))
          this.#o.log.warn({ err: apiMessage(createErr) }, `leader election: cannot create lease ${namespace}/${name}`);
        return false;
      }
    }
    this.#observe(lease);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const validMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && holder !== identity && this.#observedAt + validMs > this.#clock.now()) return false;
    const next: V1LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: now,
      acquireTime: holder === identity && spec.acquireTime ? microTime(new Date(spec.acquireTime)) : now,
      leaseTransitions: holder === identity ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    };
    try {
      const updated = await this.#api.replaceNamespacedLease(
        { name, namespace, body: { ...lease, spec: next } },
        requestOptions({ signal }),
      );
      this.#observe(updated);
      return true;
    } catch (err) {
      if (!isConflict(err))
        this.#o.log.warn({ err: apiMessage(err) }, `leader election: cannot update lease ${namespace}/${name}`);
      return false;
    }
  }

  /** Gives the lease up at once (holder cleared), so another replica need not wait for it to expire. */
  async #release(): Promise<void> {
    const { namespace, leaseName: name, identity } = this.#o;
    try {
      const lease = await this.#api.readNamespacedLease(
        { name, namespace },
        requestOptions({ signal: AbortSignal.timeout(5_000) }),
      );
      if (lease.spec?.holderIdentity !== identity) return;
      const now = microTime(new Date(this.#clock.now()));
      await this.#api.replaceNamespacedLease(
        {
          name,
          namespace,
          body: {
            ...lease,
            spec: {
              leaseDurationSeconds: 1,
              renewTime: now,
              acquireTime: now,
              leaseTransitions: lease.spec.leaseTransitions ?? 0,
            },
          },
        },
        requestOptions({ signal: AbortSignal.timeout(5_000) }),
      );
      this.#o.log.info({ identity }, 'released the leader lease');
    } catch (err) {
      this.#o.log.warn(
        { err: apiMessage(err) },
        `leader election: cannot release lease ${namespace}/${name}; it expires by itself`,
      );
    }
  }
}
