/**
 * Where a run came from, and posting there with the connection's own credentials through the official clients
 * (@slack/web-api, octokit, @linear/sdk): the agent never holds the provider's token. A run of no chat (the
 * console, the API, a schedule) has the console as its origin: nothing is posted, the run's events say it.
 */
import { LinearClient } from '@linear/sdk';
import { WebClient } from '@slack/web-api';
import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { installationClient } from '../integrations/github-client.ts';
import { isProvider } from '../integrations/model.ts';
import { linearApiUrl, slackApiUrl } from '../integrations/name-resolver.ts';
import { connectionSettings } from '../integrations/sql.ts';
import { githubThreadKey, linearIssueKey, linearSessionKey, slackThreadKey } from '../integrations/threads.ts';

export type Origin =
  | { provider: 'slack'; connectionId: string; channel: string; threadTs: string }
  | { provider: 'github'; connectionId: string; repository: string; issue: number }
  | { provider: 'linear'; connectionId: string; issueId: string | undefined; sessionId: string | undefined }
  | { provider: 'console' };

/** The chat a run's metadata names (its own, or its root's for a child); the console when none. */
export function originOf(metadata: Record<string, string>): Origin {
  const connectionId = metadata.connection_id;
  const provider = metadata.provider;
  if (!connectionId || !provider || !isProvider(provider)) return { provider: 'console' };
  if (provider === 'slack' && metadata.slack_channel && metadata.slack_thread_ts)
    return { provider, connectionId, channel: metadata.slack_channel, threadTs: metadata.slack_thread_ts };
  if (provider === 'github' && metadata.repository && /^\d+$/.test(metadata.issue_number ?? ''))
    return { provider, connectionId, repository: metadata.repository, issue: Number(metadata.issue_number) };
  if (provider === 'linear' && (metadata.linear_issue_id || metadata.linear_agent_session_id))
    return {
      provider,
      connectionId,
      issueId: metadata.linear_issue_id,
      sessionId: metadata.linear_agent_session_id,
    };
  return { provider: 'console' };
}

/** The thread key under which a later message at the origin continues the run (none for the console). */
export function originThreadKey(origin: Origin): string | undefined {
  switch (origin.provider) {
    case 'slack':
      return slackThreadKey(origin.channel, origin.threadTs);
    case 'github':
      return githubThreadKey(origin.repository, origin.issue);
    case 'linear':
      return origin.sessionId ? linearSessionKey(origin.sessionId) : linearIssueKey(origin.issueId!);
    default:
      return undefined;
  }
}

/** Where a post went, as run events and questions record it. */
export function describeOrigin(origin: Origin): Record<string, string> {
  switch (origin.provider) {
    case 'slack':
      return { provider: 'slack', channel: origin.channel, thread_ts: origin.threadTs };
    case 'github':
      return { provider: 'github', repository: origin.repository, issue: String(origin.issue) };
    case 'linear':
      return {
        provider: 'linear',
        ...(origin.issueId ? { issue_id: origin.issueId } : {}),
        ...(origin.sessionId ? { agent_session_id: origin.sessionId } : {}),
      };
    default:
      return { provider: 'console' };
  }
}

/** A post the provider refused or that could not be made, in a sentence for the agent. */
export class PostFailed extends Error {}

const TIMEOUT_MS = 15_000;

/** Posts `text` at the origin; `kind` says whether it asks (Linear agent sessions show it as an elicitation). */
export async function postAtOrigin(
  q: Queryable,
  secrets: SecretProvider,
  teamId: string,
  origin: Origin,
  text: string,
  kind: 'reply' | 'question',
): Promise<Record<string, string>> {
  if (origin.provider === 'console') return {};
  const settings = await connectionSettings(q, origin.connectionId);
  if (!settings) throw new PostFailed(`the ${origin.provider} connection the run came from was deleted`);
  try {
    if (origin.provider === 'slack') {
      const token = settings.bot_token_secret_name
        ? await secrets.get(teamId, settings.bot_token_secret_name)
        : undefined;
      if (!token)
        throw new PostFailed(`the Slack connection's bot token secret "${settings.bot_token_secret_name}" is missing`);
      const client = new WebClient(token.trim(), {
        slackApiUrl: slackApiUrl(),
        retryConfig: { retries: 0 },
        timeout: TIMEOUT_MS,
      });
      const res = await client.chat.postMessage({ channel: origin.channel, thread_ts: origin.threadTs, text });
      return res.ts ? { ts: res.ts } : {};
    }
    if (origin.provider === 'github') {
      const client = await installationClient(q, secrets, {
        team_id: teamId,
        connection_id: origin.connectionId,
        input: { repository: origin.repository, installation_id: null },
      });
      if (!client.ok) throw new PostFailed(client.reason);
      const [owner, repo] = origin.repository.split('/') as [string, string];
      const res = await client.octokit.rest.issues.createComment({
        owner,
        repo,
        issue_number: origin.issue,
        body: text,
      });
      return { comment_id: String(res.data.id), url: res.data.html_url };
    }
    const key = settings.api_key_secret_name ? await secrets.get(teamId, settings.api_key_secret_name) : undefined;
    if (!key)
      throw new PostFailed(`the Linear connection's API key secret "${settings.api_key_secret_name}" is missing`);
    const linear = new LinearClient({ apiKey: key.trim(), apiUrl: linearApiUrl() });
    if (origin.sessionId) {
      const res = await linear.createAgentActivity({
        agentSessionId: origin.sessionId,
        content: { type: kind === 'question' ? 'elicitation' : 'response', body: text },
      });
      if (!res.success) throw new PostFailed('Linear did not create the agent activity');
      return res.agentActivityId ? { activity_id: res.agentActivityId } : {};
    }
    const res = await linear.createComment({ issueId: origin.issueId!, body: text });
    if (!res.success) throw new PostFailed('Linear did not create the comment');
    return res.commentId ? { comment_id: res.commentId } : {};
  } catch (err) {
    if (err instanceof PostFailed) throw err;
    throw new PostFailed(`${origin.provider} refused the post: ${(err as Error).message}`.slice(0, 500));
  }
}
