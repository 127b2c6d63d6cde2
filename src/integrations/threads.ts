/**
 * Chat threads in provider events: the conversation a delivery belongs to (a Slack thread, a GitHub issue or
 * pull request, a Linear issue or agent session), named by a key that runs are linked under
 * (docs/orchestration.md § Chat threads continue their runs), and the message it carries. Pure: payload in,
 * facts out.
 */
import type { Provider } from './model.ts';

export interface ChatMessage {
  /** The conversation: `C123:1700000000.000100`, `owner/repo#12`, `issue:<uuid>`, `session:<uuid>`. */
  threadKey: string;
  /** The message's own identity (a message seen in two events is one follow-up). */
  messageKey: string;
  text: string;
  /** Who wrote it, as the provider names them. */
  author: string | null;
  /** A bot wrote it (our own posts included): it continues nothing. */
  fromBot: boolean;
  /** The message sits in a thread (Slack: a reply, not a new top-level message). */
  inThread: boolean;
}

const obj = (v: unknown): Record<string, unknown> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined);

export const slackThreadKey = (channel: string, threadTs: string): string => `${channel}:${threadTs}`;
export const githubThreadKey = (repository: string, number: number): string => `${repository.toLowerCase()}#${number}`;
export const linearIssueKey = (issueId: string): string => `issue:${issueId}`;
export const linearSessionKey = (sessionId: string): string => `session:${sessionId}`;

/** The message of a provider delivery, when it is one written in a conversation; undefined otherwise. */
export function chatMessage(
  provider: Provider,
  eventType: string | undefined,
  payload: unknown,
): ChatMessage | undefined {
  const body = obj(payload);
  if (!body) return undefined;
  if (provider === 'slack') {
    const event = obj(body.event);
    if (body.type !== 'event_callback' || !event) return undefined;
    const type = str(event.type);
    if (type !== 'message' && type !== 'app_mention') return undefined;
    const channel = str(event.channel);
    const ts = str(event.ts);
    if (!channel || !ts) return undefined;
    const subtype = str(event.subtype);
    const threadTs = str(event.thread_ts);
    return {
      threadKey: slackThreadKey(channel, threadTs ?? ts),
      messageKey: `slack:${channel}:${ts}`,
      text: str(event.text) ?? '',
      author: str(event.user) ?? null,
      fromBot:
        str(event.bot_id) !== undefined ||
        subtype === 'bot_message' ||
        (subtype !== undefined && !['file_share', 'thread_broadcast', 'me_message'].includes(subtype)),
      inThread: threadTs !== undefined && threadTs !== ts,
    };
  }
  if (provider === 'github') {
    if (eventType !== 'issue_comment' || body.action !== 'created') return undefined;
    const repository = str(obj(body.repository)?.full_name);
    const number = int(obj(body.issue)?.number);
    const comment = obj(body.comment);
    const id = int(comment?.id);
    if (!repository || number === undefined || !comment || id === undefined) return undefined;
    const user = obj(comment.user) ?? obj(body.sender);
    return {
      threadKey: githubThreadKey(repository, number),
      messageKey: `github:comment:${id}`,
      text: str(comment.body) ?? '',
      author: str(user?.login) ?? null,
      fromBot:
        str(user?.type) === 'Bot' || str(obj(body.sender)?.type) === 'Bot' || comment.performed_via_github_app != null,
      inThread: true,
    };
  }
  // Linear: a comment on an issue, or a prompt in an agent session.
  const type = str(body.type);
  const data = obj(body.data);
  if (type === 'Comment' && body.action === 'create' && data) {
    const issueId = str(data.issueId) ?? str(obj(data.issue)?.id);
    const id = str(data.id);
    if (!issueId || !id) return undefined;
    return {
      threadKey: linearIssueKey(issueId),
      messageKey: `linear:comment:${id}`,
      text: str(data.body) ?? '',
      author: str(data.userId) ?? str(obj(data.user)?.id) ?? null,
      fromBot: data.botActor != null || str(obj(body.actor)?.type) === 'app',
      inThread: true,
    };
  }
  if (type === 'AgentSessionEvent' && body.action === 'prompted') {
    const session = obj(body.agentSession);
    const sessionId = str(session?.id);
    const activity = obj(body.agentActivity);
    if (!sessionId) return undefined;
    const text = str(obj(activity?.content)?.body) ?? str(activity?.body) ?? '';
    return {
      threadKey: linearSessionKey(sessionId),
      messageKey: `linear:activity:${str(activity?.id) ?? `${sessionId}:${str(body.createdAt) ?? text}`}`,
      text,
      author: str(obj(body.actor)?.id) ?? null,
      fromBot: false,
      inThread: true,
    };
  }
  return undefined;
}

/**
 * Run metadata naming the conversation a provider delivery started a run in: where `reply` and `ask_user` post,
 * and the thread that continues the run. Keys: `slack_channel`, `slack_thread_ts`; `issue_number` (GitHub,
 * beside `repository`); `linear_issue_id`, `linear_agent_session_id`.
 */
export function threadMetadata(provider: Provider, payload: unknown): Record<string, string> {
  const body = obj(payload);
  if (!body) return {};
  if (provider === 'slack') {
    const event = obj(body.event);
    const channel = str(event?.channel) ?? str(obj(event?.item)?.channel);
    const ts = str(event?.thread_ts) ?? str(event?.ts) ?? str(obj(event?.item)?.ts);
    return channel && ts ? { slack_channel: channel, slack_thread_ts: ts } : {};
  }
  if (provider === 'github') {
    const number = int(obj(body.issue)?.number) ?? int(obj(body.pull_request)?.number);
    return number !== undefined ? { issue_number: String(number) } : {};
  }
  const data = obj(body.data);
  const session = obj(body.agentSession);
  const issueId =
    str(body.type) === 'Issue'
      ? str(data?.id)
      : (str(data?.issueId) ?? str(obj(data?.issue)?.id) ?? str(session?.issueId) ?? str(obj(session?.issue)?.id));
  return {
    ...(issueId ? { linear_issue_id: issueId } : {}),
    ...(str(session?.id) ? { linear_agent_session_id: str(session?.id)! } : {}),
  };
}

/** The thread keys a run's metadata names (the conversations that continue it). */
export function threadKeysOf(metadata: Record<string, string>): string[] {
  const keys: string[] = [];
  if (metadata.slack_channel && metadata.slack_thread_ts)
    keys.push(slackThreadKey(metadata.slack_channel, metadata.slack_thread_ts));
  if (metadata.repository && metadata.issue_number && /^\d+$/.test(metadata.issue_number))
    keys.push(githubThreadKey(metadata.repository, Number(metadata.issue_number)));
  // an agent session's run is continued by the session's prompts and by comments on its issue
  if (metadata.linear_agent_session_id) keys.push(linearSessionKey(metadata.linear_agent_session_id));
  if (metadata.linear_issue_id) keys.push(linearIssueKey(metadata.linear_issue_id));
  return keys;
}
