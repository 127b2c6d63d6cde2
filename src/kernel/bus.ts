import { EventEmitter } from 'node:events';
import type { Db } from './db.ts';
import type { BusTopics, Topic } from './topics.ts';

const CHANNEL = 'agentyard_bus';

export interface BusMessage {
  topic: string;
  /** Small JSON payload (NOTIFY payloads must stay under 8000 bytes). */
  data: unknown;
  /** Process that published it. */
  origin: string;
}

/** A topic whose payload is null may be published without one. */
type PublishData<T extends Topic> = null extends BusTopics[T] ? [data?: BusTopics[T]] : [data: BusTopics[T]];

/** Bus messages for a statement to send on its own commit (Bus.wireMessages), all on one channel. */
export interface WireMessages {
  channel: string;
  payloads: string[];
}

/**
 * In-process publish/subscribe that also reaches the other processes sharing a PostgreSQL server
 * (LISTEN/NOTIFY). Messages are hints to look at the database again, never the only copy of a fact.
 */
export class Bus {
  readonly #emitter = new EventEmitter();
  readonly #db: Db;
  readonly #origin = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(db: Db) {
    this.#db = db;
    this.#emitter.setMaxListeners(0);
  }

  async start(): Promise<void> {
    if (this.#db.engine !== 'postgres' || this.#unlisten) return;
    this.#unlisten = await this.#db.listen(CHANNEL, (payload) => {
      try {
        const msg = JSON.parse(payload) as BusMessage;
        if (msg.origin !== this.#origin) this.#emitter.emit(msg.topic, msg.data);
      } catch {
        // not ours
      }
    });
  }

  async publish<T extends Topic>(topic: T, ...payload: PublishData<T>): Promise<void> {
    const data = payload[0] ?? null;
    this.#emitter.emit(topic, data);
    if (this.#db.engine === 'postgres') await this.#db.notify(CHANNEL, this.#encode(topic, data));
  }

  /** Tells this process's subscribers only (the other processes hear of it through `wireMessages`). */
  emitLocal<T extends Topic>(topic: T, ...payload: PublishData<T>): void {
    const data = payload[0] ?? null;
    this.#emitter.emit(topic, data);
  }

  /**
   * The NOTIFYs that carry messages of one topic to the other processes, for a statement that sends them on its
   * own commit (`pg_notify(channel, payload)` inside it) and so saves a round trip; undefined on PGlite (one
   * process) or without messages.
   */
  wireMessages<T extends Topic>(topic: T, data: readonly BusTopics[T][]): WireMessages | undefined {
    if (this.#db.engine !== 'postgres' || data.length === 0) return undefined;
    return { channel: CHANNEL, payloads: data.map((d) => this.#encode(topic, d)) };
  }

  #encode(topic: Topic, data: unknown): string {
    return JSON.stringify({ topic, data, origin: this.#origin } satisfies BusMessage);
  }

  /** `handler` gets the topic's payload (typed by `BusTopics`); from another process it is parsed JSON. */
  subscribe<T extends Topic>(topic: T, handler: (data: BusTopics[T]) => void): () => void {
    const listener = handler as (data: unknown) => void;
    this.#emitter.on(topic, listener);
    return () => this.#emitter.off(topic, listener);
  }

  /** How many handlers this process has subscribed to `topic` (what a released wait must give back). */
  subscriberCount(topic: Topic): number {
    return this.#emitter.listenerCount(topic);
  }

  async stop(): Promise<void> {
    await this.#unlisten?.();
    this.#unlisten = undefined;
    this.#emitter.removeAllListeners();
  }
}
