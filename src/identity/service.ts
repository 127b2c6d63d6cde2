import type { Db, Queryable } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import { displayPrefix, generateApiKey, hashApiKey } from './api-keys.ts';
import * as sql from './sql.ts';
import type { Principal, SubjectType, TeamRole } from './principal.ts';
import type { AuthThrottle } from './auth-throttle.ts';

export interface CreatedKey {
  id: string;
  key: string;
  prefix: string;
  principalId: string;
}

export async function createApiKey(
  q: Queryable,
  input: {
    teamId: string;
    name: string;
    role: TeamRole;
    instanceAdmin?: boolean;
    principalId?: string;
    newPrincipal?: { kind: SubjectType; displayName: string; email?: string | null };
    expiresAt?: Date | null;
    /** Use this value instead of generating one (the bootstrap key from the environment). */
    key?: string;
  },
): Promise<CreatedKey> {
  let principalId = input.principalId;
  if (!principalId) {
    const np = input.newPrincipal ?? { kind: 'service_account' as const, displayName: input.name };
    principalId = newId(np.kind === 'user' ? 'usr' : 'sa');
    await sql.insertPrincipal(q, {
      id: principalId,
      teamId: input.teamId,
      kind: np.kind,
      displayName: np.displayName,
      email: np.email ?? null,
    });
  }
  const key = input.key ?? generateApiKey();
  const id = newId('key');
  const prefix = displayPrefix(key);
  await sql.insertApiKey(q, {
    id,
    teamId: input.teamId,
    principalId,
    name: input.name,
    prefix,
    keyHash: hashApiKey(key),
    role: input.role,
    instanceAdmin: input.instanceAdmin ?? false,
    expiresAt: input.expiresAt ?? null,
  });
  return { id, key, prefix, principalId };
}

export interface CreatedTeam {
  team: sql.TeamRow;
  adminKey: CreatedKey;
}

/** A team with one admin user and that user's first key. */
export async function createTeamWithAdmin(
  q: Queryable,
  input: { name: string; adminName?: string; adminEmail?: string | null; instanceAdmin?: boolean; key?: string },
): Promise<CreatedTeam> {
  const team = await sql.insertTeam(q, newId('team'), input.name);
  const adminKey = await createApiKey(q, {
    teamId: team.id,
    name: 'admin',
    role: 'admin',
    instanceAdmin: input.instanceAdmin ?? false,
    newPrincipal: { kind: 'user', displayName: input.adminName ?? 'admin', email: input.adminEmail ?? null },
    ...(input.key ? { key: input.key } : {}),
  });
  return { team, adminKey };
}

export interface BootstrapResult {
  /** The admin key when this start created it and it was generated (to print once). */
  generatedKey: string | undefined;
  created: boolean;
}

const BOOTSTRAP_LOCK_KEY = 7_242_002;

/**
 * First start: a default team and an instance admin key (the configured one, or a generated one).
 * A configured key that is not yet stored is added to the default team on a later start as well.
 */
export async function bootstrapIdentity(db: Db, configuredKey: string | undefined): Promise<BootstrapResult> {
  return db.transaction(async (tx) => {
    await sql.lockBootstrap(tx, BOOTSTRAP_LOCK_KEY);
    if ((await sql.countTeams(tx)) === 0) {
      const created = await createTeamWithAdmin(tx, {
        name: 'default',
        instanceAdmin: true,
        ...(configuredKey ? { key: configuredKey } : {}),
      });
      return { generatedKey: configuredKey ? undefined : created.adminKey.key, created: true };
    }
    if (configuredKey && !(await sql.keyHashExists(tx, hashApiKey(configuredKey)))) {
      const team = (await sql.findTeamByName(tx, 'default')) ?? (await sql.listTeams(tx))[0]!;
      await createApiKey(tx, {
        teamId: team.id,
        name: 'bootstrap',
        role: 'admin',
        instanceAdmin: true,
        newPrincipal: { kind: 'user', displayName: 'admin' },
        key: configuredKey,
      });
    }
    return { generatedKey: undefined, created: false };
  });
}

/**
 * Resolves bearer keys to principals. A short cache keeps the database off the hot path; revoking through
 * this process invalidates at once, other processes see a revocation within the TTL. Concurrent requests
 * with a key not in the cache share one look-up (when the TTL ends under load, fifty connections would
 * otherwise send fifty identical queries).
 */
export class Authenticator {
  readonly #db: Db;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { principal: Principal | undefined; expires: number }>();
  readonly #inFlight = new Map<string, Promise<Principal | undefined>>();
  /** Bumped by invalidateAll: a look-up that started before a revocation must not fill the cache after it. */
  #generation = 0;

  readonly #throttle: AuthThrottle | undefined;
  /** Hashes of keys that authenticated in the last hour, and until when they count as known. */
  readonly #good = new Map<string, number>();

  constructor(db: Db, ttlMs = 2_000, throttle?: AuthThrottle) {
    this.#db = db;
    this.#ttlMs = ttlMs;
    this.#throttle = throttle;
  }

  /**
   * `authenticate` for a request from `address`: refused with 429 while the address is over its failed-key
   * budget (see AuthThrottle), and a key that does not work counts against it.
   */
  authenticateFrom(key: string, address: string): Promise<Principal | undefined> {
    return this.checkFrom(hashApiKey(key), address, () => this.authenticate(key));
  }

  /**
   * Checks a bearer credential (by its hash) from `address` with `check` under the same budget of failed
   * attempts as API keys: refused with 429, unchecked, while the address is over it, unless the credential
   * worked in the last hour; a credential `check` does not accept counts against it. Worker tokens use this.
   */
  async checkFrom<T>(hash: string, address: string, check: () => Promise<T | undefined>): Promise<T | undefined> {
    const blocked = await this.#throttle?.blocked(address);
    if (blocked && !this.#recentlyGood(hash)) throw blocked;
    const found = await check();
    if (found === undefined) await this.#throttle?.failed(address);
    else this.#remember(hash);
    return found;
  }

  #remember(hash: string): void {
    if (this.#good.size > 10_000) this.#good.clear();
    this.#good.set(hash, Date.now() + 3_600_000);
  }

  /** Whether the key (by hash) authenticated in the last hour: then it is no guess, wherever it comes from. */
  #recentlyGood(hash: string): boolean {
    const until = this.#good.get(hash);
    return until !== undefined && until > Date.now();
  }

  authenticate(key: string): Promise<Principal | undefined> {
    const hash = hashApiKey(key);
    const hit = this.#cache.get(hash);
    if (hit && hit.expires > Date.now()) return Promise.resolve(hit.principal);
    const pending = this.#inFlight.get(hash);
    if (pending) return pending;
    const lookup = this.#lookUp(hash).finally(() => {
      if (this.#inFlight.get(hash) === lookup) this.#inFlight.delete(hash);
    });
    this.#inFlight.set(hash, lookup);
    return lookup;
  }

  async #lookUp(hash: string): Promise<Principal | undefined> {
    const generation = this.#generation;
    const principal = await sql.principalForKeyHash(this.#db, hash);
    if (generation === this.#generation) {
      if (this.#cache.size > 10_000) this.#cache.clear();
      this.#cache.set(hash, { principal, expires: Date.now() + this.#ttlMs });
    }
    if (principal) {
      void sql.touchApiKey(this.#db, principal.keyId).catch(() => {});
      this.#remember(hash);
    }
    return principal;
  }

  invalidateAll(): void {
    this.#generation++;
    this.#good.clear();
    this.#inFlight.clear();
    this.#cache.clear();
  }
}
