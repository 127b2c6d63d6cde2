import { hash } from 'node:crypto';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { WEBHOOKS_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { Logger } from '../kernel/log.ts';
import type { Cipher } from '../kernel/caller.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { getSignatureScheme } from './signatures/index.ts';
import type { SignatureScheme } from './signatures/index.ts';
import { liveWebhookRoutes } from './sql.ts';
import type { WebhookRouteRow } from './sql.ts';
import { Loop } from '../kernel/loop.ts';
import { SerialQueue } from '../kernel/loop.ts';

/** A live (enabled, not deleted) webhook as the ingress needs it per request. */
export interface WebhookRoute {
  uid: string;
  teamId: string;
  factoryId: string;
  name: string;
  authMode: 'token' | 'url_token' | 'signature';
  /** Set when authMode is `signature` and the scheme is known. */
  scheme: SignatureScheme | undefined;
  schemeId: string | null;
  /** The secret in force, decrypted; null while the webhook has none (every delivery is then an auth failure). */
  secret: string | null;
  /** SHA-256 of the secret, made once with the route (a rotation or an apply makes a new route): bearer and URL
   * tokens are compared with it in constant time whatever their length. */
  secretDigest: Buffer | null;
  secretVersion: number;
  /** Lower-case header name. */
  deliveryIdHeader: string | null;
}

/** Reload everything now and then, in case a change notice was lost (a dropped LISTEN connection). */
const FULL_RELOAD_INTERVAL_MS = 60_000;

/** Database look-ups of UIDs the snapshot does not know, per second (lookUpUnknown). */
export const UNKNOWN_LOOKUPS_PER_SECOND = 20;

/**
 * The in-memory routing snapshot: UID → live webhook. Loaded at start, refreshed per factory when
 * `webhooks.changed` arrives (in process, or through LISTEN/NOTIFY from other processes). Refreshes run one
 * after another, so the last one applied is the last one read.
 */
export class RoutingSnapshot {
  readonly #db: Db;
  readonly #cipher: Cipher;
  readonly #log: Logger;
  #routes = new Map<string, WebhookRoute>();
  readonly #queue = new SerialQueue();
  #unsubscribe: (() => void) | undefined;
  #fullReload: Loop | undefined;
  readonly #unknownLookups = new RateLimiterMemory({ points: UNKNOWN_LOOKUPS_PER_SECOND, duration: 1 });

  constructor(db: Db, cipher: Cipher, log: Logger) {
    this.#db = db;
    this.#cipher = cipher;
    this.#log = log;
  }

  get(uid: string): WebhookRoute | undefined {
    return this.#routes.get(uid);
  }

  get size(): number {
    return this.#routes.size;
  }

  async start(bus: Bus): Promise<void> {
    await this.reloadAll();
    this.#unsubscribe = bus.subscribe(WEBHOOKS_CHANGED_TOPIC, (data) => {
      const factoryId = (data as { factory_id?: unknown } | null)?.factory_id;
      void (typeof factoryId === 'string' ? this.reloadFactory(factoryId) : this.reloadAll());
    });
    this.#fullReload = new Loop({
      name: 'routing full reload',
      everyMs: FULL_RELOAD_INTERVAL_MS,
      atStart: false,
      pass: () => this.reloadAll(),
    }).start();
  }

  stop(): void {
    this.#unsubscribe?.();
    void this.#fullReload?.stop();
  }

  reloadAll(): Promise<void> {
    return this.#serial(async () => {
      const { rows } = await liveWebhookRoutes(this.#db);
      const next = new Map<string, WebhookRoute>();
      for (const row of rows) next.set(row.uid, this.#toRoute(row));
      this.#routes = next;
    });
  }

  reloadFactory(factoryId: string): Promise<void> {
    return this.#serial(async () => {
      const { rows } = await liveWebhookRoutes(this.#db, { factoryId });
      const next = new Map([...this.#routes].filter(([, route]) => route.factoryId !== factoryId));
      for (const row of rows) next.set(row.uid, this.#toRoute(row));
      this.#routes = next;
    });
  }

  reloadWebhook(uid: string): Promise<void> {
    return this.#serial(async () => {
      const { rows } = await liveWebhookRoutes(this.#db, { uid });
      const next = new Map(this.#routes);
      next.delete(uid);
      for (const row of rows) next.set(row.uid, this.#toRoute(row));
      this.#routes = next;
    });
  }

  /** Answers once every reload asked for so far is done. */
  settled(): Promise<void> {
    return this.#queue.settled();
  }

  /** The webhook as the database has it now (the snapshot is updated too). */
  async recheck(uid: string): Promise<WebhookRoute | undefined> {
    await this.reloadWebhook(uid);
    return this.get(uid);
  }

  /**
   * A UID the snapshot does not know, looked up in the database: a webhook applied a moment ago is live as soon
   * as its apply has committed, before the notice that reloads this snapshot arrives. At most
   * UNKNOWN_LOOKUPS_PER_SECOND, so that a flood of made-up UIDs costs the database no more than that.
   */
  async lookUpUnknown(uid: string): Promise<WebhookRoute | undefined> {
    try {
      await this.#unknownLookups.consume('unknown');
    } catch {
      return undefined;
    }
    return this.recheck(uid);
  }

  #serial(load: () => Promise<void>): Promise<void> {
    return this.#queue
      .run(load)
      .catch((err: unknown) => this.#log.error({ err }, 'webhook routing snapshot refresh failed'));
  }

  #toRoute(row: WebhookRouteRow): WebhookRoute {
    let secret: string | null = null;
    if (row.secret_ciphertext) {
      try {
        secret = this.#cipher.decrypt(row.secret_ciphertext);
      } catch (err) {
        this.#log.error(
          { err, webhook: row.uid },
          'cannot decrypt the webhook secret (another master key?); deliveries will be rejected',
        );
      }
    }
    // An empty value is a placeholder, not a secret: nothing may authenticate against it.
    if (secret === '') secret = null;
    return {
      uid: row.uid,
      teamId: row.team_id,
      factoryId: row.factory_id,
      name: row.name,
      authMode: row.auth_mode,
      scheme:
        row.auth_mode === 'signature' && row.signature_scheme ? getSignatureScheme(row.signature_scheme) : undefined,
      schemeId: row.signature_scheme,
      secret,
      secretDigest: secret === null ? null : hash('sha256', secret, 'buffer'),
      secretVersion: row.secret_version,
      deliveryIdHeader: row.delivery_id_header ? row.delivery_id_header.toLowerCase() : null,
    };
  }
}
