import type { Queryable } from '../kernel/db.ts';
import { askedChatTokenEnv, CHAT_TOKENS } from '../integrations/chat-tokens.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Assignment } from './assignment.ts';
import { buildAssignments } from './assignment-builder.ts';
import type { AssignmentRequest } from './assignment-builder.ts';
import { runnerLimitsFrom } from './limits.ts';
import { factoryRunSettings } from './sql.ts';

type FactoryRun = { id: string; team_id: string; factory_id: string | null };

/**
 * Adds to assignments what their factories' definitions set (one statement for all; runs of no factory need
 * none): the runner's `x-agentyard-limits`, `network` policy and, when `images` (a host with a container
 * runtime), container image; and a connection token the run's `secrets` ask for (integrations/chat-tokens.ts).
 */
export async function applyFactorySettings(
  q: Queryable,
  secrets: SecretProvider,
  runs: readonly FactoryRun[],
  assignments: readonly (Assignment | Error)[],
  options: { images: boolean; runner: boolean },
): Promise<void> {
  const ids = runs.filter((r) => r.factory_id !== null).map((r) => r.id);
  if (ids.length === 0) return;
  const found = await factoryRunSettings(q, ids, CHAT_TOKENS);
  await Promise.all(
    assignments.map(async (assignment, i) => {
      const run = runs[i]!;
      const settings = found.get(run.id);
      if (!settings || assignment instanceof Error) return;
      if (settings.askedTokens.length)
        Object.assign(assignment.secretEnv, await askedChatTokenEnv(secrets, run.team_id, settings.askedTokens));
      if (!options.runner) return;
      if (options.images && settings.image) assignment.image = settings.image;
      if (settings.network !== null && settings.network !== undefined) assignment.network = settings.network;
      const limits = runnerLimitsFrom(settings.limits);
      if (limits) assignment.limits = limits;
    }),
  );
}

/** The assignments of claimed runs with their factories' settings: what every executor kind hands its agents. */
export async function claimedAssignments(
  q: Queryable,
  secrets: SecretProvider,
  claimed: readonly (AssignmentRequest & { run: FactoryRun })[],
  sessionLink: (sessionId: string) => string,
  factoryMcpUrl: (() => string) | undefined,
  images: boolean,
): Promise<(Assignment | Error)[]> {
  const assignments = await buildAssignments(q, secrets, claimed, sessionLink, factoryMcpUrl);
  await applyFactorySettings(
    q,
    secrets,
    claimed.map((c) => c.run),
    assignments,
    { images, runner: true },
  );
  return assignments;
}
