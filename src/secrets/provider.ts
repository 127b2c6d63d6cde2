import type { Queryable } from '../kernel/db.ts';
import type { SecretCipher } from './crypto.ts';
import { getSecretCiphertext } from './plans.ts';

/**
 * Where secret values come from when a definition applies or a source authenticates: the database here,
 * Kubernetes Secrets under the operator. Answers `undefined` for a secret that does not exist.
 */
export interface SecretProvider {
  get(teamId: string, name: string): Promise<string | undefined>;
}

/** Managed secrets stored encrypted in the `secrets` table. */
export class DatabaseSecretProvider implements SecretProvider {
  readonly #db: Queryable;
  readonly #cipher: SecretCipher;

  constructor(db: Queryable, cipher: SecretCipher) {
    this.#db = db;
    this.#cipher = cipher;
  }

  async get(teamId: string, name: string): Promise<string | undefined> {
    const sealed = await getSecretCiphertext(this.#db, teamId, name);
    return sealed === undefined ? undefined : this.#cipher.decrypt(sealed);
  }
}

/** Characters a `url_token` secret may hold: it becomes one path segment of the ingress URL. */
export const URL_SAFE_SECRET = /^[A-Za-z0-9._~-]+$/;

export function isUrlSafe(value: string): boolean {
  return URL_SAFE_SECRET.test(value);
}

const providers = new WeakMap<object, SecretProvider>();

/**
 * Replaces where this server reads secret values from (the Kubernetes operator installs one that reads
 * Kubernetes Secrets). Takes effect for every later read, whenever it is called.
 */
export function useSecretProvider(ctx: { db: Queryable; cipher: SecretCipher }, provider: SecretProvider): void {
  providers.set(ctx, provider);
}

/** The provider of this server: the one installed with `useSecretProvider`, else the database. */
export function secretProviderFor(ctx: { db: Queryable; cipher: SecretCipher }): SecretProvider {
  let provider = providers.get(ctx);
  if (!provider) {
    provider = new DatabaseSecretProvider(ctx.db, ctx.cipher);
    providers.set(ctx, provider);
  }
  return provider;
}

/** A provider that asks `secretProviderFor(ctx)` on every read, so that a later `useSecretProvider` is honoured. */
export function delegatingSecretProvider(ctx: { db: Queryable; cipher: SecretCipher }): SecretProvider {
  return { get: (teamId, name) => secretProviderFor(ctx).get(teamId, name) };
}
