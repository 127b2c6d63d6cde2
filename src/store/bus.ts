import { EventEmitter } from 'node:events';
import type { Db } from './db.ts';

const CHANNEL = 'agentyard_bus';

export interface BusMessage {
  topic: string;
  /** Small JSON payload (NOTIFY payloads must stay under 8000 bytes). */
  data: unknown;
  /** Process that published it. */
  origin: string;
}

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

  async publish(topic: string, data: unknown = null): Promise<void> {
    this.emitLocal(topic, data);
    if (this.#db.engine === 'postgres') await this.#db.notify(CHANNEL, this.#encode(topic, data));
  }

  /** Tells this process's subscribers only (the other processes hear of it through `wireMessages`). */
  emitLocal(topic: string, data: unknown = null): void {
    this.#emitter.emit(topic, data);
  }

  /**
   * The NOTIFYs that carry messages of one topic to the other processes, for a statement that sends them on its
   * own commit (`pg_notify(channel, payload)` inside it) and so saves a round trip; undefined on PGlite (one
   * process) or without messages.
   */
  wireMessages(topic: string, data: readonly unknown[]): WireMessages | undefined {
    if (this.#db.engine !== 'postgres' || data.length === 0) return undefined;
    return { channel: CHANNEL, payloads: data.map((d) => this.#encode(topic, d)) };
  }

  #encode(topic: string, data: unknown): string {
    return JSON.stringify({ topic, data, origin: this.#origin } satisfies BusMessage);
  }

  subscribe(topic: string, handler: (data: unknown) => void): () => void {
    this.#emitter.on(topic, handler);
    return () => this.#emitter.off(topic, handler);
  }

  async stop(): Promise<void> {
    await this.#unlisten?.();
    this.#unlisten = undefined;
    this.#emitter.removeAllListeners();
  }
}
