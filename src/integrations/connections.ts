/**
 * The live connections as the events route needs them per request: provider, team and the decrypted signing
 * secret. Read from the database on first use and kept until a connection or a secret changes (in this process
 * or, through the bus, in another) or a delivery fails to verify against it.
 */
import type { Logger } from '../kernel/log.ts';
import type { Cipher } from '../kernel/caller.ts';
import { SECRETS_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { INTEGRATIONS_CHANGED_TOPIC } from './model.ts';
import type { Provider } from './model.ts';
import { getConnectionById } from './sql.ts';

export interface LiveConnection {
  id: string;
  teamId: string;
  provider: Provider;
  /** The signing secret, decrypted; null while the managed secret it names is missing or empty. */
  secret: string | null;
  secretVersion: number;
}

/** An unknown id is remembered this long, so that a sender posting to a wrong URL costs no query per request. */
const UNKNOWN_TTL_MS = 5_000;
const MAX_UNKNOWN = 10_000;

export class ConnectionCache {
  readonly #db: Db;
  readonly #cipher: Cipher;
  readonly #log: Logger;
  #live = new Map<string, LiveConnection>();
  #unknown = new Map<string, number>();
  #unsubscribe: (() => void)[] = [];

  constructor(db: Db, cipher: Cipher, log: Logger) {
    this.#db = db;
    this.#cipher = cipher;
    this.#log = log;
  }

  start(bus: Bus): void {
    const forget = () => {
      this.#live = new Map();
      this.#unknown = new Map();
    };
    this.#unsubscribe.push(
      bus.subscribe(INTEGRATIONS_CHANGED_TOPIC, forget),
      bus.subscribe(SECRETS_CHANGED_TOPIC, forget),
    );
  }

  stop(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
  }

  async get(id: string, fresh = false): Promise<LiveConnection | undefined> {
    if (!fresh) {
      const known = this.#live.get(id);
      if (known) return known;
      const missedAt = this.#unknown.get(id);
      if (missedAt !== undefined && Date.now() - missedAt < UNKNOWN_TTL_MS) return undefined;
    }
    const row = await getConnectionById(this.#db, id);
    if (!row) {
      this.#live.delete(id);
      if (this.#unknown.size >= MAX_UNKNOWN) this.#unknown = new Map();
      this.#unknown.set(id, Date.now());
      return undefined;
    }
    let secret: string | null = null;
    if (row.signing_ciphertext) {
      try {
        secret = this.#cipher.decrypt(row.signing_ciphertext);
      } catch (err) {
        this.#log.error(
          { err, connection: id },
          'cannot decrypt the connection signing secret; events will be rejected',
        );
      }
    }
    const live: LiveConnection = {
      id: row.id,
      teamId: row.team_id,
      provider: row.provider,
      secret: secret === '' ? null : secret,
      secretVersion: row.secret_version,
    };
    this.#unknown.delete(id);
    this.#live.set(id, live);
    return live;
  }
}
