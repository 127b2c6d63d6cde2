import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Assignment } from './assignment.ts';
import { buildAssignments } from './assignment-builder.ts';
import type { AssignmentRequest } from './assignment-builder.ts';
import { runnerLimitsFrom } from './limits.ts';
import { runnerSettings } from './sql.ts';

/**
 * Adds to assignments what their runs' runners set: the `x-agentyard-limits`, the `network` policy, and the container image when
 * `images` (a host with a container runtime). Runs of no factory have no runner: no query for them.
 */
export async function applyRunnerSettings(
  q: Queryable,
  runs: readonly { id: string; factory_id: string | null }[],
  assignments: readonly (Assignment | Error)[],
  images: boolean,
): Promise<void> {
  const ids = runs.filter((r) => r.factory_id !== null).map((r) => r.id);
  if (ids.length === 0) return;
  const found = await runnerSettings(q, ids);
  assignments.forEach((assignment, i) => {
    const runner = found.get(runs[i]!.id);
    if (!runner || assignment instanceof Error) return;
    if (images && runner.image) assignment.image = runner.image;
    if (runner.network !== null && runner.network !== undefined) assignment.network = runner.network;
    const limits = runnerLimitsFrom(runner.limits);
    if (limits) assignment.limits = limits;
  });
}

/** The assignments of claimed runs with their runners' settings: what every executor kind hands its agents. */
export async function claimedAssignments(
  q: Queryable,
  secrets: SecretProvider,
  claimed: readonly (AssignmentRequest & { run: { id: string; factory_id: string | null } })[],
  sessionLink: (sessionId: string) => string,
  factoryMcpUrl: (() => string) | undefined,
  images: boolean,
): Promise<(Assignment | Error)[]> {
  const assignments = await buildAssignments(q, secrets, claimed, sessionLink, factoryMcpUrl);
  await applyRunnerSettings(
    q,
    claimed.map((c) => c.run),
    assignments,
    images,
  );
  return assignments;
}
