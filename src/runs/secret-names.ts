import { AppError } from '../kernel/errors.ts';
import type { Queryable } from '../kernel/db.ts';
import type { Principal } from '../identity/principal.ts';
import type { AgentConfig } from '../engine/model.ts';

/**
 * The managed secrets a run configuration names (their values would reach the agent's environment):
 * `harness_auth_secrets.*_auth_secret_name`, and `harness.auth_secret_name` as Python SDK 0.11 sends it.
 */
export function secretNamesOf(config: AgentConfig | undefined): string[] {
  if (!config) return [];
  const names = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string' && value !== '') names.add(value);
  };
  const auth = config.harness_auth_secrets as Record<string, unknown> | undefined;
  if (auth && typeof auth === 'object') for (const value of Object.values(auth)) add(value);
  add((config.harness as { auth_secret_name?: unknown } | undefined)?.auth_secret_name);
  return [...names];
}

/** The refusal of a secret the caller may not give to a run: worded as for a secret that does not exist. */
export function secretNotGranted(name: string): AppError {
  return new AppError(
    'secret_not_found',
    `no managed secret named "${name}" that this key may give to a run (a team admin grants one to the team's agents in a factory definition)`,
  );
}

/**
 * Refuses a run configuration naming a secret the caller may not give to a run (docs/security.md, "Secrets").
 * The composition root (src/composition.ts) passes the factories' grants (src/factories/secret-grants.ts).
 */
export type RunSecretsCheck = (q: Queryable, principal: Principal, config: AgentConfig | undefined) => Promise<void>;

/** Without the factories' grants: team and instance admins may name any team secret, members none. */
export const adminsOnlySecrets: RunSecretsCheck = async (_q, principal, config) => {
  if (principal.role === 'admin' || principal.instanceAdmin) return;
  const [first] = secretNamesOf(config);
  if (first !== undefined) throw secretNotGranted(first);
};
