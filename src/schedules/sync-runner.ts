import { FACTORIES_CHANGED_TOPIC, SCHEDULES_CHANGED_TOPIC, WEBHOOKS_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { Logger } from '../kernel/log.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { syncFactorySchedules } from './automation-sync.ts';
import type { Clock } from '../kernel/clock.ts';
import { factoriesWithSchedules } from './sql.ts';
import { SerialQueue } from '../kernel/loop.ts';

/** Re-sync every factory this often, in case a change notice was lost. */
const FULL_SYNC_INTERVAL_MS = 60_000;

/**
 * Keeps automation schedules in step with the applied automations: all factories at start and every
 * minute, one factory whenever `webhooks.changed` or `factories.changed` names it. Syncs run one after another.
 */
export class AutomationScheduleSync {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #queue = new SerialQueue();
  #unsubscribe: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: { db: Db; bus: Bus; clock: Clock; log: Logger }) {
    this.#db = options.db;
    this.#bus = options.bus;
    this.#clock = options.clock;
    this.#log = options.log;
  }

  async start(): Promise<void> {
    const onChange = (data: unknown): void => {
      const factoryId = (data as { factory_id?: unknown } | null)?.factory_id;
      void (typeof factoryId === 'string' ? this.syncFactory(factoryId) : this.syncAll());
    };
    const unsubscribes = [
      this.#bus.subscribe(WEBHOOKS_CHANGED_TOPIC, onChange),
      this.#bus.subscribe(FACTORIES_CHANGED_TOPIC, onChange),
    ];
    this.#unsubscribe = () => unsubscribes.forEach((u) => u());
    await this.syncAll();
    this.#loop = (async () => {
      while (!this.#stop.signal.aborted) {
        await this.#clock.sleep(FULL_SYNC_INTERVAL_MS, this.#stop.signal);
        if (!this.#stop.signal.aborted) await this.syncAll();
      }
    })();
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.#stop.abort();
    await this.#loop;
    await this.#queue.settled();
  }

  syncAll(): Promise<void> {
    return this.#serial(async () => {
      for (const factoryId of await factoriesWithSchedules(this.#db)) await this.#syncOne(factoryId);
    });
  }

  syncFactory(factoryId: string): Promise<void> {
    return this.#serial(() => this.#syncOne(factoryId));
  }

  async #syncOne(factoryId: string): Promise<void> {
    const result = await syncFactorySchedules(this.#db, factoryId, this.#clock);
    for (const skipped of result.skipped) {
      this.#log.warn({ factory: factoryId, ...skipped }, 'automation schedule left out: its cron does not parse');
    }
    if (result.created || result.updated || result.deleted) {
      this.#log.info(
        { factory: factoryId, created: result.created, updated: result.updated, deleted: result.deleted },
        'automation schedules synced',
      );
      await this.#bus.publish(SCHEDULES_CHANGED_TOPIC, { factory_id: factoryId });
    }
  }

  #serial(work: () => Promise<void>): Promise<void> {
    return this.#queue.run(work).catch((err: unknown) => this.#log.error({ err }, 'automation schedule sync failed'));
  }
}
