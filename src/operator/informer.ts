import { ListWatch, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../kernel/log.ts';
import { apiMessage } from './kube.ts';

export type InformerEvent = 'add' | 'update' | 'delete';

export interface InformerOptions<T extends KubernetesObject> {
  /** For logs and readiness (`factories`, `secrets`, `jobs`). */
  name: string;
  config: KubeConfig;
  /** The watch path, e.g. `/apis/agentyard.dev/v1alpha1/factories`. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  labelSelector?: string;
  log: Logger;
  /** Restart delays after an error: first, doubling, at most. */
  restartBaseMs?: number;
  restartMaxMs?: number;
}

/**
 * A cache of one resource type kept by client-node's ListWatch (list, then watch from the last
 * resourceVersion; a 410 Gone relists and reports vanished objects as deletes; reconnects back off
 * 1 s → 30 s). ListWatch stops for good on an error; this restarts it with backoff (1 s doubling to 30 s,
 * reset once a list and watch succeed) and reports `synced` false while it is down, for readiness.
 */
export class Informer<T extends KubernetesObject> {
  readonly name: string;
  readonly #o: InformerOptions<T>;
  readonly #listWatch: ListWatch<T>;
  readonly #handlers: { event: InformerEvent; fn: (obj: T) => void }[] = [];
  #synced = false;
  #everSynced = false;
  #stopped = true;
  #restartDelay: number;
  #restartTimer: NodeJS.Timeout | undefined;
  #lastError: string | undefined;
  /** The start under way: ListWatch opens its watch at the end of one, even when stopped meanwhile. */
  #starting: Promise<void> | undefined;

  constructor(options: InformerOptions<T>) {
    this.name = options.name;
    this.#o = options;
    this.#restartDelay = options.restartBaseMs ?? 1_000;
    this.#listWatch = new ListWatch<T>(
      options.path,
      new Watch(options.config),
      options.list,
      false,
      options.labelSelector,
    );
    this.#listWatch.on('error', (err: unknown) => this.#onError(err));
  }

  /** True once the cache holds a full list and the watch runs; false again while restarting after an error. */
  get synced(): boolean {
    return this.#synced;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  on(event: InformerEvent, fn: (obj: T) => void): void {
    this.#handlers.push({ event, fn });
    this.#listWatch.on(event, fn);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#listWatch.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.#listWatch.list(namespace);
  }

  /** Starts listing and watching; resolves once the first attempt ended (synced or failed and restarting). */
  async start(): Promise<void> {
    this.#stopped = false;
    await this.#startOnce();
  }

  #startOnce(): Promise<void> {
    const starting = this.#listAndWatch();
    this.#starting = starting;
    void starting.finally(() => {
      if (this.#starting === starting) this.#starting = undefined;
    });
    return starting;
  }

  async #listAndWatch(): Promise<void> {
    let failed = false;
    const onError = (): void => {
      failed = true;
    };
    this.#listWatch.on('error', onError);
    try {
      await this.#listWatch.start();
    } catch (err) {
      failed = true;
      this.#onError(err);
    } finally {
      this.#listWatch.off('error', onError);
    }
    if (!failed && !this.#stopped) {
      this.#synced = true;
      this.#lastError = undefined;
      this.#restartDelay = this.#o.restartBaseMs ?? 1_000;
      if (!this.#everSynced) this.#o.log.debug({ informer: this.name }, `informer ${this.name} synced`);
      this.#everSynced = true;
    }
  }

  #onError(err: unknown): void {
    this.#synced = false;
    this.#lastError = apiMessage(err);
    if (this.#stopped || this.#restartTimer) return;
    const delay = this.#restartDelay;
    this.#restartDelay = Math.min(delay * 2, this.#o.restartMaxMs ?? 30_000);
    this.#o.log.warn(
      { informer: this.name, err: this.#lastError, restartInMs: delay },
      `informer ${this.name} stopped: ${this.#lastError}; restarting`,
    );
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (!this.#stopped) void this.#startOnce();
    }, delay);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#synced = false;
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    for (const { event, fn } of this.#handlers.splice(0)) this.#listWatch.off(event, fn);
    await this.#listWatch.stop();
    // a start under way opens its watch after this stop: it is closed once open
    if (this.#starting) {
      await this.#starting;
      await this.#listWatch.stop();
    }
  }
}

/** Waits until every informer synced at least once, or the signal aborts. */
export async function waitForSync(
  informers: readonly Informer<KubernetesObject>[],
  signal: AbortSignal,
  pollMs = 100,
): Promise<boolean> {
  while (!signal.aborted) {
    if (informers.every((i) => i.synced)) return true;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return false;
}
