import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from '../kernel/log.ts';
import { generateApiKey } from '../identity/api-keys.ts';
import { createTeamWithAdmin } from '../identity/service.ts';
import type { Db } from '../kernel/db.ts';
import { isConflict, isNotFound, requestOptions } from './kube.ts';
import { findNamespaceTeam, insertNamespaceTeam, lockNamespaceTeam } from './sql.ts';

/** The name of a namespace's team; `:` keeps it apart from teams created through the API. */
export function namespaceTeamName(namespace: string): string {
  return `kubernetes:${namespace}`;
}

export interface NamespaceTeamsOptions {
  db: Db;
  core: CoreV1Api;
  log: Logger;
  /** Secret the team's first admin API key is written to (key `token`); empty: not written. */
  apiKeySecret: string;
}

/**
 * One team per namespace holds the namespace's factories, runs and deliveries, so that a factory's managed
 * secrets are the Secrets of its own namespace and namespaces stay apart in the API. The team is created
 * with the first Factory of the namespace; its admin API key is written to a Secret in that namespace
 * (the only place it is ever shown), so the namespace's users can call the Run API.
 */
export class NamespaceTeams {
  readonly #o: NamespaceTeamsOptions;
  readonly #known = new Map<string, string>();

  constructor(options: NamespaceTeamsOptions) {
    this.#o = options;
  }

  async teamFor(namespace: string): Promise<string> {
    const known = this.#known.get(namespace) ?? (await findNamespaceTeam(this.#o.db, namespace));
    if (known) {
      this.#known.set(namespace, known);
      return known;
    }
    const key = generateApiKey();
    const name = namespaceTeamName(namespace);
    const teamId = await this.#o.db.transaction(async (tx) => {
      await lockNamespaceTeam(tx, name);
      const existing = await findNamespaceTeam(tx, namespace);
      if (existing) return existing;
      const created = await createTeamWithAdmin(tx, { name, adminName: `${name} admin`, key });
      await insertNamespaceTeam(tx, namespace, created.team.id);
      // Written before the commit: a key nobody can read is worse than a Secret naming a key that never existed.
      await this.#writeKeySecret(namespace, key);
      return created.team.id;
    });
    this.#known.set(namespace, teamId);
    this.#o.log.info(
      { namespace, team_id: teamId },
      `created team ${name} for the factories of namespace ${namespace}`,
    );
    return teamId;
  }

  async #writeKeySecret(namespace: string, key: string): Promise<void> {
    const name = this.#o.apiKeySecret;
    if (!name) return;
    const body = {
      metadata: {
        name,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': 'agentyard', 'app.kubernetes.io/part-of': 'agentyard' },
        annotations: { 'agentyard.dev/team': namespaceTeamName(namespace) },
      },
      type: 'Opaque',
      stringData: { token: key },
    };
    const options = requestOptions({ signal: AbortSignal.timeout(10_000) });
    try {
      await this.#o.core.createNamespacedSecret({ namespace, body }, options);
    } catch (err) {
      if (!isConflict(err)) throw err;
      await this.#o.core.replaceNamespacedSecret({ name, namespace, body }, options).catch((replaceErr: unknown) => {
        if (!isNotFound(replaceErr)) throw replaceErr;
      });
    }
  }
}
