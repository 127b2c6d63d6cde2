import type { Queryable } from '../kernel/db.ts';
import type { Cipher } from '../kernel/caller.ts';
import { getSecretCiphertext } from './sql.ts';

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
  readonly #cipher: Cipher;

  constructor(db: Queryable, cipher: Cipher) {
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

/**
 * The secret provider of one server: the database unless another is installed (the Kubernetes operator installs
 * one that reads Kubernetes Secrets). Every read asks the provider installed at that moment.
 */
export class ServerSecrets implements SecretProvider {
  #provider: SecretProvider;

  constructor(db: Queryable, cipher: Cipher) {
    this.#provider = new DatabaseSecretProvider(db, cipher);
  }

  /** Replaces where this server reads secret values from, for every later read. */
  use(provider: SecretProvider): void {
    this.#provider = provider;
  }

  get(teamId: string, name: string): Promise<string | undefined> {
    return this.#provider.get(teamId, name);
  }
}
