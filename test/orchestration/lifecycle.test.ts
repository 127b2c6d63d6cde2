/**
 * The examples' lifecycle end to end (docs/orchestration.md § A worked example), with stand-in agents that speak
 * MCP through the real client SDK and stand-ins of Slack's and GitHub's APIs reached through @slack/web-api and
 * octokit:
 *   1. a Slack app_mention (or a GitHub issue comment) starts the foreman;
 *   2. the foreman dispatches `implement`, which reports;
 *   3. the foreman asks the user: chat.postMessage in the thread with the bot token (a comment on the issue);
 *   4. a signed thread reply (a comment on the issue) resumes the foreman, and starts no run;
 *   5. the foreman replies with the result.
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startSlackStandIn } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';
import { startGithubApi } from '../support/github-api.ts';
import type { GithubApiStandIn } from '../support/github-api.ts';
import type { TestServer } from '../support/server.ts';
import { post } from '../ingress/support.ts';
import { SLACK_APP_MENTION } from '../integrations/fixtures.ts';
import { eventsOf, executionsOf, waitForState } from '../execution/support.ts';
import { waitForCreatedRun } from '../support/run-events.ts';
import {
  connectSlack,
  managedFactory,
  postSlackEvent,
  slackForemanFiles,
  startMcpServer,
  usePlaybook,
} from './support.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

const BOT_TOKEN = 'xoxb-4242-lifecycle-bot-token';

const FILES = {
  ...slackForemanFiles('Lifecycle'),
  'automations/issue/automation.md': `---
triggers:
  - provider: github
    event: issue_mentioned
---

Handle the request on the issue.
`,
};

// An automation's run is named after the automation (`mention`, `issue`); both run the foreman.
const FOREMAN_PLAYBOOK = {
  '1': [
    { call: 'list_agents', save: 'agents' },
    {
      call: 'dispatch_agent',
      args: { agent: 'implement', prompt: 'Implement what this asks:\n{{doc.prompt}}', title: 'Implement the fix' },
      save: 'child',
    },
    { call: 'wait_for_runs', args: { run_ids: ['{{child.run_id}}'], timeout_seconds: 120 }, save: 'waited' },
    { call: 'ask_user', args: { question: 'implement says: {{waited.reports}}. Shall I open the pull request?' } },
    { result: 'Asked the user whether to open the pull request.' },
  ],
  '2': [
    { call: 'reply', args: { text: 'Opened the pull request after your answer. {{doc.prompt}}' } },
    { result: 'Replied with the result.' },
  ],
} as const;

usePlaybook({
  mention: FOREMAN_PLAYBOOK as never,
  issue: FOREMAN_PLAYBOOK as never,
  implement: {
    default: [
      { call: 'report', args: { text: 'Fixed it on branch fix-7: https://github.com/Codertocat/Hello-World/pull/7' } },
      { result: 'Implemented on branch fix-7.' },
    ],
  },
});

function issueComment(options: { body: string; commentId: number; login: string; type: 'User' | 'Bot' }) {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find(
    (e) => e.name === 'issue_comment',
  )!;
  const payload = structuredClone(entry.examples.find((x) => x.action === 'created')!);
  payload.comment.body = options.body;
  payload.comment.id = options.commentId;
  payload.comment.user = { ...payload.comment.user, login: options.login, type: options.type };
  payload.sender = { ...payload.sender, login: options.login, type: options.type };
  payload.installation = { id: 4242001, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0MjAwMQ==' };
  return payload;
}

/** What the stand-in agent of a run's last execution recorded of its environment (mcp-agent.mjs). */
async function agentEnvironment(s: TestServer, runId: string): Promise<{ env_names: string[]; env_sha256: string[] }> {
  const workspace = (await executionsOf(s, runId)).at(-1)!.workspace!;
  return JSON.parse(readFileSync(path.join(workspace, '.mcp-agent.json'), 'utf8'));
}

async function runsOfFactory(s: TestServer, factoryId: string) {
  const res = await s.server.ctx.db.query<{ id: string; parent_run_id: string | null; source: string; config: any }>(
    'SELECT id, parent_run_id, source, config FROM runs WHERE factory_id = $1 ORDER BY created_at',
    [factoryId],
  );
  return res.rows;
}

describe.each(ENGINES)('the factory lifecycle on %s', (engine) => {
  let s: TestServer;
  let chat: ChatApis;
  let github: GithubApiStandIn;
  let factoryId: string;
  let slackUrl: string;
  let githubUrl: string;
  const slackSecret = randomBytes(16).toString('hex');
  const githubSecret = randomBytes(16).toString('hex');

  const slackPost = (event: Record<string, unknown>, eventId: string) =>
    postSlackEvent(slackUrl, slackSecret, event, eventId);
  const githubPost = async (payload: unknown, delivery: string) => {
    const body = JSON.stringify(payload);
    return post(githubUrl, body, {
      'content-type': 'application/json',
      'x-github-event': 'issue_comment',
      'x-github-delivery': delivery,
      'x-hub-signature-256': await sign(githubSecret, body),
    });
  };

  beforeAll(async () => {
    chat = await startSlackStandIn(BOT_TOKEN);
    github = await startGithubApi(publicKey);
    process.env.AGENTYARD_SLACK_API_URL = chat.slackUrl;
    process.env.AGENTYARD_GITHUB_API_URL = github.url;
    s = await startMcpServer(engine);
    slackUrl = await connectSlack(s, slackSecret, BOT_TOKEN);
    for (const [name, value] of Object.entries({ 'gh-app-key': privateKey, 'gh-app-hook': githubSecret }))
      expect((await s.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    const gh = await s.api('PUT', '/integrations/github', {
      mode: 'app',
      app_id: '4242',
      private_key_secret_name: 'gh-app-key',
      webhook_secret_name: 'gh-app-hook',
    });
    expect(gh.status, gh.text).toBe(200);
    githubUrl = gh.body.events_url;
    factoryId = await managedFactory(s, 'lifecycle', FILES);
  });
  afterAll(async () => {
    await s?.close();
    await chat?.close();
    await github?.close();
    delete process.env.AGENTYARD_SLACK_API_URL;
    delete process.env.AGENTYARD_GITHUB_API_URL;
  });

  it('Slack: mention → dispatch → report → question in the thread → thread reply resumes → reply', async () => {
    const mention = await slackPost(SLACK_APP_MENTION.event, 'Ev0LIFECYCLE1');
    expect(mention.status, mention.text).toBe(202);
    const foremanId = await waitForCreatedRun(s.server.ctx.bus, async () => (await runsOfFactory(s, factoryId))[0]?.id);

    // 3. the foreman ends BLOCKED with its question, posted in the mention's thread with the bot token
    const blocked = await waitForState(s, foremanId, ['BLOCKED', 'SUCCEEDED', 'FAILED', 'ERROR'], 60_000);
    expect(blocked.state, JSON.stringify(blocked.status_message)).toBe('BLOCKED');
    expect(blocked.source).toBe('SLACK');
    expect(blocked.status_message.message).toContain('Shall I open the pull request?');
    expect(blocked.status_message.message).toContain('fix-7');
    expect(chat.posts).toHaveLength(1);
    expect(chat.posts[0]).toMatchObject({
      api: 'slack chat.postMessage',
      authorization: `Bearer ${BOT_TOKEN}`,
      body: { channel: 'C123ABC456', thread_ts: '1515449522.000016' },
    });
    expect(String(chat.posts[0]!.body.text)).toContain('Shall I open the pull request?');

    // 2. implement ran as the foreman's child and reported
    const runs = await runsOfFactory(s, factoryId);
    expect(runs).toHaveLength(2);
    const child = runs[1]!;
    expect(child).toMatchObject({ parent_run_id: foremanId, source: 'ORCHESTRATION' });
    // served as API (the TypeScript client declares no ORCHESTRATION), with the stored source beside it
    expect(child.config.name).toBe('implement');
    const childRun = await s.api('GET', `/agent/runs/${child.id}`);
    expect(childRun.body).toMatchObject({
      state: 'SUCCEEDED',
      parent_run_id: foremanId,
      source: 'API',
      source_detail: 'ORCHESTRATION',
    });
    const foremanEvents = await eventsOf(s, foremanId);
    expect(foremanEvents.find((e) => e.type === 'report')?.data).toMatchObject({
      from_run_id: child.id,
      agent: 'implement',
    });
    expect(foremanEvents.find((e) => e.type === 'question')?.data.posted_to).toMatchObject({ provider: 'slack' });
    expect((await eventsOf(s, child.id)).find((e) => e.type === 'report')?.data).toMatchObject({
      to_run_id: foremanId,
    });

    // a bot's message in the thread (our own post coming back) continues nothing
    const echo = await slackPost(
      {
        type: 'message',
        subtype: 'bot_message',
        bot_id: 'B0AGENTYARD',
        text: 'echo',
        ts: '1700000000.000001',
        thread_ts: '1515449522.000016',
        channel: 'C123ABC456',
        channel_type: 'channel',
      },
      'Ev0LIFECYCLEBOT',
    );
    expect(echo.status).toBe(202);

    // 4. a signed reply in the thread resumes the foreman, as `message` and as `app_mention` (one follow-up)
    const reply = {
      type: 'message',
      channel: 'C123ABC456',
      channel_type: 'channel',
      user: 'U123ABC456',
      text: 'Yes, open it.',
      ts: '1515449600.000100',
      thread_ts: '1515449522.000016',
    };
    expect((await slackPost(reply, 'Ev0LIFECYCLE2')).status).toBe(202);
    expect((await slackPost({ ...reply, type: 'app_mention' }, 'Ev0LIFECYCLE3')).status).toBe(202);

    // 5. the foreman replies in the thread with the result and succeeds
    const done = await waitForState(s, foremanId, ['SUCCEEDED', 'FAILED'], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe('SUCCEEDED');
    expect(chat.posts).toHaveLength(2);
    expect(chat.posts[1]!.body).toMatchObject({ channel: 'C123ABC456', thread_ts: '1515449522.000016' });
    expect(String(chat.posts[1]!.body.text)).toContain('Yes, open it.');
    const followups = await s.api('GET', `/agent/runs/${foremanId}/followups`);
    const fromSlack = (followups.body.followups ?? followups.body).filter((f: any) =>
      f.message.includes('Yes, open it.'),
    );
    expect(fromSlack).toHaveLength(1);
    // the thread started no run
    expect(await runsOfFactory(s, factoryId)).toHaveLength(2);

    // the factory declares slack, yet no agent held the bot token: the server posted both with it
    const botTokenHash = createHash('sha256').update(BOT_TOKEN).digest('hex');
    for (const runId of [foremanId, child.id]) {
      const env = await agentEnvironment(s, runId);
      expect(env.env_names).toContain('AGENTYARD_RUN_TOKEN');
      expect(env.env_names).not.toContain('SLACK_BOT_TOKEN');
      expect(env.env_sha256).not.toContain(botTokenHash);
    }
  });

  it('GitHub: an issue comment starts the foreman, its question is a comment, a comment on the issue resumes it', async () => {
    const before = (await runsOfFactory(s, factoryId)).length;
    const mention = await githubPost(
      issueComment({ body: '@agentyard please fix the greeting', commentId: 501, login: 'Codertocat', type: 'User' }),
      '6f1e0c1a-0000-4000-8000-000000000501',
    );
    expect(mention.status, mention.text).toBe(202);
    const foremanId = await waitForCreatedRun(
      s.server.ctx.bus,
      async () => (await runsOfFactory(s, factoryId))[before]?.id,
    );
    const blocked = await waitForState(s, foremanId, ['BLOCKED', 'SUCCEEDED', 'FAILED', 'ERROR'], 60_000);
    expect(blocked.state, JSON.stringify(blocked.status_message)).toBe('BLOCKED');
    expect(blocked.source).toBe('GITHUB_ACTION');
    const asked = github.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/comments'));
    expect(asked).toHaveLength(1);
    expect(asked[0]!.path).toBe('/repos/Codertocat/Hello-World/issues/1/comments');
    expect(asked[0]!.body.body).toContain('Shall I open the pull request?');

    // our own comment coming back as an event is a bot's: it resumes nothing and starts nothing
    const ours = await githubPost(
      issueComment({ body: asked[0]!.body.body, commentId: 502, login: 'agentyard[bot]', type: 'Bot' }),
      '6f1e0c1a-0000-4000-8000-000000000502',
    );
    expect(ours.status).toBe(202);
    const answer = await githubPost(
      issueComment({ body: 'Go ahead, open it.', commentId: 503, login: 'Codertocat', type: 'User' }),
      '6f1e0c1a-0000-4000-8000-000000000503',
    );
    expect(answer.status).toBe(202);
    const done = await waitForState(s, foremanId, ['SUCCEEDED', 'FAILED'], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe('SUCCEEDED');
    const comments = github.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/comments'));
    expect(comments).toHaveLength(2);
    expect(comments[1]!.body.body).toContain('Go ahead, open it.');
    // foreman + implement, and nothing more for the answer
    expect(await runsOfFactory(s, factoryId)).toHaveLength(before + 2);
  });
});
