/**
 * Apply-time look-ups for a team's integrations: is a provider connected, and which IDs do the names of a
 * factory's name aliases stand for. Slack through @slack/web-api (AGENTYARD_SLACK_API_URL), Linear through
 * @linear/sdk (AGENTYARD_LINEAR_API_URL); each list is read once per apply.
 */
import { LinearClient } from '@linear/sdk';
import { WebClient } from '@slack/web-api';
import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { isProvider } from './model.ts';
import type { ConnectionRow } from './model.ts';
import { getConnection } from './sql.ts';

export function slackApiUrl(env: NodeJS.ProcessEnv = process.env): string {
  return `${(env.AGENTYARD_SLACK_API_URL ?? 'https://slack.com/api').replace(/\/+$/, '')}/`;
}

export function linearApiUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.AGENTYARD_LINEAR_API_URL ?? 'https://api.linear.app/graphql';
}

/** A directory of names: each entry's names (compared case-insensitively, `#`/`@` dropped) and its ID. */
type Directory = { id: string; names: string[] }[];

function key(name: string): string {
  return name.trim().replace(/^[#@]/, '').toLowerCase();
}

async function slackDirectory(client: WebClient, field: string): Promise<Directory> {
  const entries: Directory = [];
  let cursor: string | undefined;
  if (field === 'channels') {
    do {
      const page = await client.conversations.list({
        types: 'public_channel,private_channel',
        exclude_archived: true,
        limit: 200,
        ...(cursor ? { cursor } : {}),
      });
      for (const c of page.channels ?? []) if (c.id && c.name) entries.push({ id: c.id, names: [c.name] });
      cursor = page.response_metadata?.next_cursor || undefined;
    } while (cursor);
    return entries;
  }
  do {
    const page = await client.users.list({ limit: 200, ...(cursor ? { cursor } : {}) });
    for (const u of page.members ?? []) {
      if (!u.id) continue;
      entries.push({
        id: u.id,
        names: [u.name, u.profile?.display_name, u.real_name].filter((n): n is string => !!n),
      });
    }
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
  return entries;
}

async function linearDirectory(client: LinearClient, field: string, names: readonly string[]): Promise<Directory> {
  if (field === 'issues') {
    const entries: Directory = [];
    for (const name of names) {
      const issue = await client.issue(name.trim()).catch(() => undefined);
      if (issue) entries.push({ id: issue.id, names: [name, issue.identifier] });
    }
    return entries;
  }
  const all: Directory = [];
  const read = async <T extends { id: string }>(
    first: () => Promise<{ nodes: T[]; pageInfo: { hasNextPage: boolean }; fetchNext(): Promise<unknown> }>,
    namesOf: (node: T) => (string | undefined)[],
  ) => {
    const connection = await first();
    while (connection.pageInfo.hasNextPage) await connection.fetchNext();
    for (const node of connection.nodes)
      all.push({ id: node.id, names: namesOf(node).filter((n): n is string => !!n) });
  };
  if (field === 'teams')
    await read(
      () => client.teams({ first: 100 }),
      (t) => [t.name, t.key],
    );
  else if (field === 'projects')
    await read(
      () => client.projects({ first: 100 }),
      (p) => [p.name],
    );
  else if (field === 'states')
    await read(
      () => client.workflowStates({ first: 100 }),
      (s) => [s.name],
    );
  return all;
}

/** Resolves names for one team; the provider's lists are read once per (provider, field). */
export function teamNameResolver(
  q: Queryable,
  secrets: SecretProvider,
  teamId: string,
): {
  integrationConnected(type: string): Promise<boolean>;
  resolveNames(provider: string, field: string, names: readonly string[]): Promise<Map<string, string[]>>;
} {
  const connections = new Map<string, Promise<ConnectionRow | undefined>>();
  const connection = (provider: string) => {
    let found = connections.get(provider);
    if (!found) {
      found = isProvider(provider) ? getConnection(q, teamId, provider) : Promise.resolve(undefined);
      connections.set(provider, found);
    }
    return found;
  };
  const directories = new Map<string, Promise<Directory>>();
  const token = async (provider: string, setting: string): Promise<string> => {
    const row = await connection(provider);
    if (!row) throw new Error(`the team has not connected ${provider} (PUT /api/v1/integrations/${provider})`);
    const name = row.settings[setting];
    const value = name ? await secrets.get(teamId, name) : undefined;
    if (!value) throw new Error(`the ${provider} connection has no \`${setting}\` secret to look names up with`);
    return value.trim();
  };
  return {
    async integrationConnected(type) {
      return (await connection(type)) !== undefined;
    },
    async resolveNames(provider, field, names) {
      const cacheKey = field === 'issues' ? `${provider}/${field}/${names.join('\u0000')}` : `${provider}/${field}`;
      let directory = directories.get(cacheKey);
      if (!directory) {
        directory =
          provider === 'slack'
            ? token('slack', 'bot_token_secret_name').then((t) =>
                slackDirectory(new WebClient(t, { slackApiUrl: slackApiUrl(), retryConfig: { retries: 0 } }), field),
              )
            : token('linear', 'api_key_secret_name').then((t) =>
                linearDirectory(new LinearClient({ apiKey: t, apiUrl: linearApiUrl() }), field, names),
              );
        directories.set(cacheKey, directory);
      }
      const entries = await directory;
      const found = new Map<string, string[]>();
      for (const name of names) {
        const ids = entries.filter((e) => e.names.some((n) => key(n) === key(name))).map((e) => e.id);
        if (ids.length > 0) found.set(name, ids);
      }
      return found;
    },
  };
}
