import type { CoreV1Api } from '@kubernetes/client-node';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Queryable } from '../kernel/db.ts';
import { isNotFound, requestOptions } from './kube.ts';
import { findTeamNamespace } from './sql.ts';

/** The default key of a Secret named by `secretName` without `/key`. */
export const DEFAULT_SECRET_KEY = 'value';

const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** `name` → Secret `name`, key `value`; `name/key` → Secret `name`, key `key`. Undefined when it cannot name a Secret. */
export function parseSecretReference(reference: string): { name: string; key: string } | undefined {
  const slash = reference.indexOf('/');
  const name = slash === -1 ? reference : reference.slice(0, slash);
  const key = slash === -1 ? DEFAULT_SECRET_KEY : reference.slice(slash + 1);
  if (!OBJECT_NAME.test(name) || name.length > 253 || !SECRET_KEY.test(key) || key.length > 253) return undefined;
  return { name, key };
}

/**
 * Managed secrets of namespace teams read from the Kubernetes Secrets of that namespace, fresh at every
 * read (a changed Secret takes effect at the next apply). Other teams keep the fallback (the database).
 */
export class KubernetesSecretProvider implements SecretProvider {
  readonly #core: CoreV1Api;
  readonly #db: Queryable;
  readonly #fallback: SecretProvider;
  readonly #namespaces = new Map<string, string | null>();

  constructor(deps: { core: CoreV1Api; db: Queryable; fallback: SecretProvider }) {
    this.#core = deps.core;
    this.#db = deps.db;
    this.#fallback = deps.fallback;
  }

  async #namespaceOf(teamId: string): Promise<string | undefined> {
    let namespace = this.#namespaces.get(teamId);
    if (namespace === undefined) {
      namespace = (await findTeamNamespace(this.#db, teamId)) ?? null;
      // Only positive answers are kept: a namespace team may be created later for a team seen now.
      if (namespace !== null) this.#namespaces.set(teamId, namespace);
    }
    return namespace ?? undefined;
  }

  async get(teamId: string, reference: string): Promise<string | undefined> {
    const namespace = await this.#namespaceOf(teamId);
    if (namespace === undefined) return this.#fallback.get(teamId, reference);
    const ref = parseSecretReference(reference);
    if (!ref) return undefined;
    try {
      const secret = await this.#core.readNamespacedSecret(
        { name: ref.name, namespace },
        requestOptions({ signal: AbortSignal.timeout(10_000) }),
      );
      const encoded = secret.data?.[ref.key];
      if (encoded !== undefined) return Buffer.from(encoded, 'base64').toString('utf8');
      return secret.stringData?.[ref.key];
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
