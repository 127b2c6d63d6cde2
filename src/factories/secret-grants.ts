/**
 * Which managed secrets a caller may give to a run (docs/security.md, "Secrets"). Team and instance admins
 * manage the team's secrets and may name any of them. A member may name only the secrets a factory of the team
 * grants to its agents: those its applied definition gives an agent or automation (`secrets`, a harness's
 * `auth.secretName`), or, for a run sent to one factory, that factory's. Anything else answers 404, as a secret
 * that does not exist does: a member learns nothing about names.
 */
import type { Principal } from '../identity/principal.ts';
import type { ResolvedExecution } from '../definitions/model.ts';
import type { Queryable } from '../kernel/db.ts';
import type { AgentConfig } from '../engine/model.ts';
import { secretNamesOf, secretNotGranted } from '../runs/secret-names.ts';
import { appliedDefinitions } from './apply/sql.ts';

function grantsOfExecution(execution: ResolvedExecution | undefined, into: Set<string>): void {
  if (!execution) return;
  for (const name of execution.secrets ?? []) into.add(name);
  const auth = execution.harness?.auth;
  if (auth?.source === 'managedSecret') into.add(auth.secretName);
}

/** The secrets the applied definitions of the team's factories (or of one factory) grant to their agents. */
export async function grantedSecrets(q: Queryable, teamId: string, factoryId?: string): Promise<Set<string>> {
  const granted = new Set<string>();
  for (const definition of await appliedDefinitions(q, teamId, factoryId)) {
    for (const agent of definition.agents ?? []) grantsOfExecution(agent.execution, granted);
    for (const automation of definition.automations ?? []) grantsOfExecution(automation.execution, granted);
  }
  return granted;
}

/**
 * Refuses a run configuration naming a secret the caller may not give to a run: 404 `secret_not_found`. With
 * `factoryId`, the grants are that factory's (a run sent to it); without, any factory's of the team.
 */
export async function authorizeRunSecrets(
  q: Queryable,
  principal: Principal,
  config: AgentConfig | undefined,
  factoryId?: string,
): Promise<void> {
  const names = secretNamesOf(config);
  if (names.length === 0 || principal.role === 'admin' || principal.instanceAdmin) return;
  const granted = await grantedSecrets(q, principal.teamId, factoryId);
  const refused = names.find((name) => !granted.has(name));
  if (refused !== undefined) throw secretNotGranted(refused);
}
