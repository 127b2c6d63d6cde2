import { AppError } from '../kernel/errors.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import type { Cipher } from '../kernel/caller.ts';
import * as sql from './sql.ts';
import type { SecretRow } from './sql.ts';

/** Secret names: 1-128 letters, digits, `.`, `_` or `-`, starting with a letter or digit. */
export const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const SECRET_NAME_RULE = '1-128 letters, digits, `.`, `_` or `-`, starting with a letter or digit';
/** Large enough for an SSH private key or a PEM bundle. */
export const MAX_SECRET_BYTES = 64 * 1024;

export function checkSecretName(name: string): void {
  if (!SECRET_NAME.test(name))
    throw new AppError('invalid_request', `secret name "${name}" must be ${SECRET_NAME_RULE}`);
}

/** Team-scoped managed secrets, encrypted at rest. Values are written here and read only through a SecretProvider. */
export class SecretService {
  readonly #db: Db;
  readonly #cipher: Cipher;

  constructor(db: Db, cipher: Cipher) {
    this.#db = db;
    this.#cipher = cipher;
  }

  /**
   * `createdBy`: the subject of the key writing the value (it owns the secret from now on). `ownedOnly`: an
   * existing secret is replaced only when `createdBy` owns it (a member's write), else `secret_not_owned`.
   */
  async put(
    teamId: string,
    name: string,
    value: string,
    createdBy: string | null,
    options: { ownedOnly?: boolean } = {},
  ): Promise<{ row: SecretRow; created: boolean }> {
    checkSecretName(name);
    if (value.length === 0) throw new AppError('invalid_request', 'value must not be empty');
    if (Buffer.byteLength(value, 'utf8') > MAX_SECRET_BYTES)
      throw new AppError('invalid_request', `value must be at most ${MAX_SECRET_BYTES / 1024} KiB`);
    const ownedBy = options.ownedOnly && createdBy !== null ? createdBy : undefined;
    const written = await sql.upsertSecret(this.#db, teamId, name, this.#cipher.encrypt(value), createdBy, ownedBy);
    if (!written) throw new AppError('secret_not_owned', `the managed secret "${name}" is not yours to write`);
    return written;
  }

  /**
   * Stores a value another service sealed with the server's cipher (webhook secrets: the webhook keeps the
   * same ciphertext), within the caller's transaction when given one. The caller checks name and value.
   */
  async putSealed(
    teamId: string,
    name: string,
    sealed: Buffer,
    options: { within?: Queryable } = {},
  ): Promise<{ row: SecretRow; created: boolean }> {
    // written by the server itself: the team admins' (no owner), and never refused
    const written = await sql.upsertSecret(options.within ?? this.#db, teamId, name, sealed, null);
    if (!written) throw new Error(`secret ${name} was not written`);
    return written;
  }

  /** The secret's metadata, or undefined when the team has none of that name. */
  find(teamId: string, name: string): Promise<SecretRow | undefined> {
    return sql.getSecretMeta(this.#db, teamId, name);
  }

  async list(teamId: string): Promise<SecretRow[]> {
    return sql.listSecrets(this.#db, teamId);
  }

  async get(teamId: string, name: string): Promise<SecretRow> {
    const row = await sql.getSecretMeta(this.#db, teamId, name);
    if (!row) throw new AppError('secret_not_found', `no managed secret named "${name}"`);
    return row;
  }

  async delete(teamId: string, name: string): Promise<SecretRow> {
    const row = await sql.deleteSecret(this.#db, teamId, name);
    if (!row) throw new AppError('secret_not_found', `no managed secret named "${name}"`);
    return row;
  }
}
