/**
 * Local stand-ins for the Slack Web API and Linear's GraphQL API, answering in their documented wire formats
 * the look-ups Agentyard makes through @slack/web-api and @linear/sdk at apply:
 * Slack `conversations.list` / `users.list` (api.slack.com/methods, cursor pagination in
 * `response_metadata.next_cursor`), Linear `teams`, `projects`, `workflowStates` connections and `issue`
 * (developers.linear.app, Relay-style `nodes` + `pageInfo`); and whose a member's token is: Slack `auth.test`,
 * Linear `viewer`; and the posts the factory interface makes: Slack `chat.postMessage` (JSON or form body, as
 * @slack/web-api sends it), Linear `commentCreate` and `agentActivityCreate`, each recorded in `posts`.
 */
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatApiData {
  slackToken: string;
  channels: { id: string; name: string }[];
  users: { id: string; name: string; real_name?: string }[];
  linearKey: string;
  teams: { id: string; name: string; key: string }[];
  projects: { id: string; name: string }[];
  states: { id: string; name: string }[];
  issues: { id: string; identifier: string }[];
  /** Members' user tokens (xoxp-…) and the user each belongs to, for `auth.test`. */
  slackUserTokens?: Record<string, { user_id: string; user: string }>;
  /** Members' personal API keys and the user each belongs to, for `viewer`. */
  linearUserKeys?: Record<string, { id: string; name: string; displayName: string }>;
  /** Workspace users, for `users` look-ups. */
  linearUsers?: { id: string; name: string; displayName: string; email?: string }[];
}

export interface ChatPost {
  api: 'slack chat.postMessage' | 'linear commentCreate' | 'linear agentActivityCreate';
  /** The Authorization header it came with. */
  authorization: string;
  body: Record<string, unknown>;
}

export interface ChatApis {
  slackUrl: string;
  linearUrl: string;
  calls: string[];
  posts: ChatPost[];
  /** Calls `listener` after each answered request (every call recorded by then); answers the function that removes it. */
  onCall(listener: () => void): () => void;
  close(): Promise<void>;
}

const PAGE_INFO = { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null };

export async function startChatApis(data: ChatApiData): Promise<ChatApis> {
  const calls: string[] = [];
  const posts: ChatPost[] = [];
  let posted = 0;
  const answered = new EventEmitter();
  answered.setMaxListeners(0);
  const server = createServer((req, res) => {
    res.once('finish', () => answered.emit('call'));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(value));
      const slack = /^\/slack\/api\/([A-Za-z.]+)$/.exec(req.url ?? '');
      if (slack) {
        calls.push(`slack ${slack[1]}`);
        const userToken = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (slack[1] === 'auth.test' && data.slackUserTokens?.[userToken]) {
          const who = data.slackUserTokens[userToken]!;
          return json(200, {
            ok: true,
            url: 'https://example.slack.com/',
            team: 'Example',
            team_id: 'T123ABC456',
            ...who,
          });
        }
        if (req.headers.authorization !== `Bearer ${data.slackToken}`)
          return json(200, { ok: false, error: 'invalid_auth' });
        if (slack[1] === 'conversations.list')
          return json(200, { ok: true, channels: data.channels, response_metadata: { next_cursor: '' } });
        if (slack[1] === 'chat.postMessage') {
          const form = (req.headers['content-type'] ?? '').includes('json')
            ? (JSON.parse(body) as Record<string, unknown>)
            : Object.fromEntries(new URLSearchParams(body));
          if (!form.channel) return json(200, { ok: false, error: 'channel_not_found' });
          if (!form.text && !form.blocks) return json(200, { ok: false, error: 'no_text' });
          posts.push({ api: 'slack chat.postMessage', authorization: req.headers.authorization ?? '', body: form });
          const ts = `1700000000.${String(++posted).padStart(6, '0')}`;
          return json(200, {
            ok: true,
            channel: form.channel,
            ts,
            message: { type: 'message', bot_id: 'B0AGENTYARD', text: form.text, ts, thread_ts: form.thread_ts },
          });
        }
        if (slack[1] === 'users.list')
          return json(200, { ok: true, members: data.users, response_metadata: { next_cursor: '' } });
        return json(200, { ok: false, error: 'unknown_method' });
      }
      if (req.url === '/linear/graphql') {
        const member = data.linearUserKeys?.[req.headers.authorization ?? ''];
        if (member && /^\s*query\s+viewer\b/.test((JSON.parse(body) as { query: string }).query)) {
          calls.push('linear viewer');
          return json(200, { data: { viewer: { ...member, active: true, admin: false, guest: false } } });
        }
        if (req.headers.authorization !== data.linearKey)
          return json(400, {
            errors: [{ message: 'Authentication required', extensions: { type: 'authentication error' } }],
          });
        const { query, variables } = JSON.parse(body) as { query: string; variables?: Record<string, unknown> };
        const mutation = /^\s*mutation\s+\w*\s*(?:\([^)]*\))?\s*\{\s*(\w+)/.exec(query)?.[1];
        if (mutation === 'commentCreate' || mutation === 'agentActivityCreate') {
          calls.push(`linear ${mutation}`);
          const input = (variables?.input ?? {}) as Record<string, unknown>;
          posts.push({ api: `linear ${mutation}`, authorization: req.headers.authorization ?? '', body: input });
          const id = `00000000-0000-4000-8000-${String(++posted).padStart(12, '0')}`;
          const entity = mutation === 'commentCreate' ? 'comment' : 'agentActivity';
          return json(200, {
            data: { [mutation]: { success: true, lastSyncId: posted, [entity]: { id } } },
          });
        }
        const root = /^\s*query\s+\w*\s*(?:\([^)]*\))?\s*\{\s*(\w+)/.exec(query)?.[1] ?? '';
        calls.push(`linear ${root}`);
        const list = (nodes: unknown[]) => json(200, { data: { [root]: { nodes, pageInfo: PAGE_INFO } } });
        if (root === 'teams') return list(data.teams);
        if (root === 'projects') return list(data.projects);
        if (root === 'workflowStates') return list(data.states);
        if (root === 'users') {
          const filter = JSON.stringify(variables ?? {}).toLowerCase();
          return list(
            (data.linearUsers ?? []).filter(
              (u) =>
                filter.includes(`"${u.displayName.toLowerCase()}"`) || filter.includes(`"${u.name.toLowerCase()}"`),
            ),
          );
        }
        if (root === 'issue') {
          const issue = data.issues.find((i) => i.identifier === variables?.id || i.id === variables?.id);
          if (!issue) return json(200, { data: null, errors: [{ message: 'Entity not found: Issue' }] });
          return json(200, { data: { issue } });
        }
        return json(200, { data: null, errors: [{ message: `unknown field ${root}` }] });
      }
      json(404, { message: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    onCall(listener) {
      answered.on('call', listener);
      return () => answered.off('call', listener);
    },
    slackUrl: `${base}/slack/api`,
    linearUrl: `${base}/linear/graphql`,
    calls,
    posts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The Slack stand-in answering with `slackToken`, holding only what `data` adds (Linear's side unused). */
export function startSlackStandIn(slackToken: string, data: Partial<ChatApiData> = {}): Promise<ChatApis> {
  return startChatApis({
    slackToken,
    channels: [],
    users: [],
    linearKey: 'lin_api_unused',
    teams: [],
    projects: [],
    states: [],
    issues: [],
    ...data,
  });
}
