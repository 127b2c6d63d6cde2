/**
 * credentialStrategy CREATOR: a run started by a provider event acts as the member who caused it. The event's
 * sender (GitHub login, Slack user id, Linear user id) is mapped to the member who linked that account, and
 * the run's provider variables carry that member's own tokens instead of the connection's (the App
 * installation, the bot, the API key). A sender no member linked starts no run as anyone: CreatorUnknown.
 */
import type { Queryable } from '../kernel/db.ts';
import type { ActsAs } from '../runs/model.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { getSecretMeta } from '../secrets/sql.ts';
import { identitiesOfSubject, identityOfAccount } from './identities.ts';
import { isProvider } from './model.ts';
import type { Provider } from './model.ts';
import { declaredConnections } from './sql.ts';

/** The variables each provider's identity is lent in, whichever the strategy. */
export const PROVIDER_ENV: Record<Provider, readonly string[]> = {
  github: ['GH_TOKEN', 'GITHUB_TOKEN'],
  slack: ['SLACK_BOT_TOKEN'],
  linear: ['LINEAR_API_KEY'],
};

export class CreatorUnknown extends Error {}

/**
 * Whether the run acts as the member who caused its event: only what the server recorded when it created the run
 * from a signed provider event (`runs.acts_as`), never the run's metadata, which is the caller's.
 */
export function actsAsCreator(run: { acts_as?: ActsAs | null }): run is { acts_as: ActsAs } {
  return Boolean(run.acts_as);
}

/** The environment of a CREATOR run: the creator's linked tokens, GitHub always, Slack/Linear where declared. */
export async function creatorRunEnv(
  q: Queryable,
  secrets: SecretProvider,
  run: { team_id: string; factory_id: string | null; acts_as: ActsAs },
): Promise<Record<string, string>> {
  const provider = run.acts_as.provider;
  const sender = run.acts_as.account;
  if (!isProvider(provider) || !sender)
    throw new CreatorUnknown(
      'credentialStrategy CREATOR: the event does not say who caused it, so the run has no identity to act as',
    );
  const member = await identityOfAccount(q, run.team_id, provider, sender);
  if (!member)
    throw new CreatorUnknown(
      `credentialStrategy CREATOR: the ${provider} account ${sender} that caused this event is not linked to a member ` +
        `(the member links it with PUT /api/v1/integrations/${provider}/identities/me); the run does not act as the connection instead`,
    );
  const declared = new Set(run.factory_id ? (await declaredConnections(q, run.factory_id)).map((c) => c.provider) : []);
  const env: Record<string, string> = {};
  for (const identity of await identitiesOfSubject(q, run.team_id, member.subject_id)) {
    if (identity.provider !== 'github' && !declared.has(identity.provider)) continue;
    // written since by someone else (an admin's value over the member's secret): not the member's token any more
    const owner = (await getSecretMeta(q, run.team_id, identity.secret_name))?.created_by ?? null;
    if (owner !== identity.secret_owner && owner !== identity.subject_id) continue;
    const token = (await secrets.get(run.team_id, identity.secret_name))?.trim();
    if (!token) continue;
    for (const name of PROVIDER_ENV[identity.provider]) env[name] = token;
  }
  return env;
}
