import type { ClaimedFactory } from '../engine/engine.ts';
import type { Queryable } from '../kernel/db.ts';
import { askedChatTokenEnv, CHAT_TOKENS } from '../integrations/chat-tokens.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Assignment } from './assignment.ts';
import { buildAssignments } from './assignment-builder.ts';
import type { AssignmentRequest } from './assignment-builder.ts';
import { runnerLimitsFrom } from './limits.ts';
import { factoryRunSettings } from './sql.ts';
import type { FactoryRunSettings } from './sql.ts';

type FactoryRun = { id: string; team_id: string; factory_id: string | null; acts_as?: unknown };

const TOKEN_PROVIDERS = new Set(CHAT_TOKENS.map((t) => t.provider));

/**
 * What a claim read of a run's factory, as `factoryRunSettings` answers it; undefined when the connection tokens
 * its secrets may ask for must still be read (it names secrets, declares Slack or Linear, and acts as no member).
 */
function settingsFromClaim(run: FactoryRun, claimed: ClaimedFactory): FactoryRunSettings | undefined {
  const secrets = Array.isArray(claimed.secrets) ? claimed.secrets : [];
  const integrations = Array.isArray(claimed.integrations) ? claimed.integrations : [];
  const declaresChat = integrations.some(
    (i) => typeof i?.type === 'string' && TOKEN_PROVIDERS.has(i.type.trim().toLowerCase()),
  );
  if (secrets.length > 0 && declaresChat && !run.acts_as) return undefined;
  return { image: claimed.image, limits: claimed.limits, network: claimed.network, askedTokens: [] };
}

/**
 * Adds to assignments what their factories' definitions set: the runner's `x-agentyard-limits`, `network` policy
 * and, when `images` (a host with a container runtime), container image; and a connection token the run's
 * `secrets` ask for (integrations/chat-tokens.ts). `claimed[i]`: what the claim of run i read of its factory;
 * runs without it, or whose secrets may ask for a token, are read in one statement.
 */
export async function applyFactorySettings(
  q: Queryable,
  secrets: SecretProvider,
  runs: readonly FactoryRun[],
  assignments: readonly (Assignment | Error)[],
  options: { images: boolean; runner: boolean; claimed?: readonly (ClaimedFactory | null | undefined)[] },
): Promise<void> {
  const settings = new Map<string, FactoryRunSettings>();
  const unread: string[] = [];
  runs.forEach((run, i) => {
    if (run.factory_id === null) return;
    const claimed = options.claimed?.[i];
    if (claimed === null) return; // no factory to read, as the claim saw it
    const known = claimed ? settingsFromClaim(run, claimed) : undefined;
    if (known) settings.set(run.id, known);
    else unread.push(run.id);
  });
  if (unread.length > 0) for (const [id, s] of await factoryRunSettings(q, unread, CHAT_TOKENS)) settings.set(id, s);
  if (settings.size === 0) return;
  await Promise.all(
    assignments.map(async (assignment, i) => {
      const run = runs[i]!;
      const found = settings.get(run.id);
      if (!found || assignment instanceof Error) return;
      if (found.askedTokens.length)
        Object.assign(assignment.secretEnv, await askedChatTokenEnv(secrets, run.team_id, found.askedTokens));
      if (!options.runner) return;
      if (options.images && found.image) assignment.image = found.image;
      if (found.network !== null && found.network !== undefined) assignment.network = found.network;
      const limits = runnerLimitsFrom(found.limits);
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
    { images, runner: true, claimed: claimed.map((c) => c.inputs?.factory) },
  );
  return assignments;
}
