/**
 * Who may trigger, end to end on real HTTP: signed GitHub, Slack and Linear deliveries built from the
 * providers' published payloads reach a factory from committed files. With no `triggerPolicy`, an author
 * whose `author_association` is NONE starts nothing, a bot or a Slack Connect user starts nothing, and each
 * delivery's page says why; the same events from a member start their runs; a factory widens the policy.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { createGitFactory } from '../factories/support.ts';
import type { GitFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { connectProviders } from './connections.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';
import { linearCommentCreated, SLACK_APP_MENTION } from './fixtures.ts';

type Payload = Record<string, any>;

function githubExample(event: string, action: string): Payload {
  const entry = (examples as { name: string; examples: Payload[] }[]).find((e) => e.name === event)!;
  return structuredClone(entry.examples.find((x) => x.action === action)!);
}

const factoryYaml = (policy = '') => `schemaVersion: v1alpha1
name: Who may trigger
repositories:
  - owner: Codertocat
    name: Hello-World
integrations:
  - type: slack
  - type: linear
${policy}agentDefaults:
  model: auto
  runner: default
`;

const automation = (provider: string, event: string) => `---
triggers:
  - provider: ${provider}
    event: ${event}
---

Handle the ${provider} ${event}.
`;

/** GitHub events whose author_association is the example's object's, each with an automation listening. */
const GITHUB_CASES: {
  name: string;
  header: string;
  action: string;
  trigger: string;
  authored: (p: Payload) => Payload;
}[] = [
  { name: 'issue-created', header: 'issues', action: 'opened', trigger: 'issue_created', authored: (p) => p.issue },
  {
    name: 'issue-mentioned',
    header: 'issue_comment',
    action: 'created',
    trigger: 'issue_mentioned',
    authored: (p) => p.comment,
  },
  {
    name: 'pr-opened',
    header: 'pull_request',
    action: 'opened',
    trigger: 'pull_request_opened',
    authored: (p) => p.pull_request,
  },
  {
    name: 'review-submitted',
    header: 'pull_request_review',
    action: 'submitted',
    trigger: 'pull_request_review_submitted',
    authored: (p) => p.review,
  },
];

describe.each(ENGINES)('who may trigger, on %s', (engine) => {
  let server: TestServer;
  let factory: GitFactory;
  const githubSecret = randomBytes(20).toString('hex');
  const slackSecret = randomBytes(16).toString('hex');
  const linearSecret = `lin_wh_${randomBytes(16).toString('hex')}`;
  const urls: Record<string, string> = {};
  let sequence = 0;

  beforeAll(async () => {
    server = await startTestServer(engine);
    Object.assign(
      urls,
      await connectProviders(server, { github: githubSecret, slack: slackSecret, linear: linearSecret }),
    );
  });
  afterAll(async () => {
    factory?.remote.close();
    await server?.close();
  });

  /** Sends a signed GitHub delivery; answers its id once the evaluator has handled it. */
  async function github(header: string, payload: Payload): Promise<string> {
    const body = JSON.stringify(payload);
    const res = await post(urls.github!, body, {
      'content-type': 'application/json',
      'x-github-event': header,
      'x-github-delivery': `c0ffee00-0000-4000-8000-${String(++sequence).padStart(12, '0')}`,
      'x-hub-signature-256': await sign(githubSecret, body),
    });
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    return res.body.delivery_id as string;
  }

  async function detail(provider: string, deliveryId: string): Promise<Payload> {
    const res = await server.api('GET', `/integrations/${provider}/deliveries/${deliveryId}`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  }

  function caseExample(c: (typeof GITHUB_CASES)[number], association: string): Payload {
    const payload = githubExample(c.header, c.action);
    payload.repository.full_name = 'Codertocat/Hello-World';
    const authored = c.authored(payload);
    authored.author_association = association;
    // The mention events need a mention in what was written.
    if (c.header === 'issue_comment') authored.body = '@agentyard please look';
    return payload;
  }

  it('applies a factory with GitHub, Slack and Linear automations and no triggerPolicy', async () => {
    factory = await createGitFactory(server, {
      'factory.yaml': factoryYaml(),
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      ...Object.fromEntries(
        GITHUB_CASES.map((c) => [`automations/${c.name}/automation.md`, automation('github', c.trigger)]),
      ),
      'automations/slack-mention/automation.md': automation('slack', 'app_mention'),
      'automations/linear-comment/automation.md': automation('linear', 'comment_created'),
    });
    expect((await factory.sync()).status.state).toBe('applied');
  });

  it('with no triggerPolicy, issues.opened from author_association NONE starts no run, and says why', async () => {
    const payload = githubExample('issues', 'opened');
    payload.issue.author_association = 'NONE';
    const deliveryId = await github('issues', payload);
    expect(await runsOfDeliveries(server, [deliveryId])).toHaveLength(0);
    const page = await detail('github', deliveryId);
    expect(page.runs).toEqual([]);
    // The connection's delivery log says it too, on the delivery's line.
    const log = (await server.api('GET', '/integrations/github/deliveries')).body.deliveries as Payload[];
    expect(log.find((d) => d.delivery_id === deliveryId)?.skipped_reasons).toEqual([
      'skipped: Codertocat (author_association NONE) may not trigger this factory; triggerPolicy.github.authorAssociations allows OWNER, MEMBER, COLLABORATOR',
    ]);
    expect(page.skipped).toEqual([
      {
        automation_id: expect.stringMatching(/^auto_/),
        reason:
          'skipped: Codertocat (author_association NONE) may not trigger this factory; triggerPolicy.github.authorAssociations allows OWNER, MEMBER, COLLABORATOR',
      },
    ]);
  });

  it('the same event from a MEMBER starts its run', async () => {
    const payload = githubExample('issues', 'opened');
    payload.issue.author_association = 'MEMBER';
    const deliveryId = await github('issues', payload);
    expect(await runsOfDeliveries(server, [deliveryId])).toHaveLength(1);
    expect((await detail('github', deliveryId)).skipped).toBeUndefined();
  });

  it.each(GITHUB_CASES)('webhooks-examples $name from NONE starts nothing; from OWNER one run', async (c) => {
    const none = await github(c.header, caseExample(c, 'NONE'));
    expect(await runsOfDeliveries(server, [none])).toHaveLength(0);
    expect((await detail('github', none)).skipped).toHaveLength(1);
    const owner = await github(c.header, caseExample(c, 'OWNER'));
    expect(await runsOfDeliveries(server, [owner])).toHaveLength(1);
  });

  function slackHeaders(body: string) {
    const at = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', slackSecret).update(`v0:${at}:${body}`).digest('hex');
    return {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(at),
      'x-slack-signature': `v0=${signature}`,
    };
  }

  async function slack(event: Payload, top: Payload = {}): Promise<string> {
    const body = JSON.stringify({
      ...structuredClone(SLACK_APP_MENTION),
      ...top,
      event_id: `Ev${++sequence}`,
      event: { ...SLACK_APP_MENTION.event, ts: `1515449522.${sequence}`, ...event },
    });
    const res = await post(urls.slack!, body, slackHeaders(body));
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    return res.body.delivery_id as string;
  }

  it('Slack: a member starts a run; a bot and a Slack Connect user start nothing, and the page says why', async () => {
    expect(await runsOfDeliveries(server, [await slack({ user_team: 'T123ABC456' })])).toHaveLength(1);
    const bot = await slack({ bot_id: 'B0BOT', bot_profile: { id: 'B0BOT', name: 'ci-bot' } });
    expect(await runsOfDeliveries(server, [bot])).toHaveLength(0);
    expect((await detail('slack', bot)).skipped[0].reason).toContain('triggerPolicy.slack.allowBots is false');
    const external = await slack({ user_team: 'T999OTHER', team: 'T999OTHER' }, { is_ext_shared_channel: true });
    expect(await runsOfDeliveries(server, [external])).toHaveLength(0);
    expect((await detail('slack', external)).skipped[0].reason).toContain('workspace T999OTHER (Slack Connect)');
  });

  async function linear(payload: Payload): Promise<string> {
    const body = JSON.stringify({ ...payload, webhookTimestamp: Date.now() });
    const res = await post(urls.linear!, body, {
      'content-type': 'application/json',
      'linear-delivery': `7f8e9d0c-1b2a-4c3d-9e8f-${String(++sequence).padStart(12, '0')}`,
      'linear-event': 'Comment',
      'linear-signature': createHmac('sha256', linearSecret).update(body).digest('hex'),
    });
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    return res.body.delivery_id as string;
  }

  it("Linear: a workspace user's comment starts a run; an app's or an external user's does not", async () => {
    const comment = linearCommentCreated(
      'Please look at this.',
      `5e6f7a8b-9c0d-4e1f-8a2b-${randomBytes(6).toString('hex')}`,
    );
    expect(await runsOfDeliveries(server, [await linear(comment)])).toHaveLength(1);
    const byApp = await linear({ ...comment, actor: { id: 'app-1', type: 'OauthClient', name: 'Some app' } });
    expect(await runsOfDeliveries(server, [byApp])).toHaveLength(0);
    expect((await detail('linear', byApp)).skipped[0].reason).toContain('triggerPolicy.linear.allowBots is false');
    const synced = await linear({ ...comment, data: { ...comment.data, externalUserId: 'ext-42' } });
    expect(await runsOfDeliveries(server, [synced])).toHaveLength(0);
  });

  it('a factory widens the policy in factory.yaml: NONE and bots start runs', async () => {
    await factory.commit(
      {
        'factory.yaml': factoryYaml(
          'triggerPolicy:\n  github:\n    authorAssociations: [OWNER, MEMBER, COLLABORATOR, NONE]\n  slack:\n    allowBots: true\n',
        ),
      },
      'let everyone in',
    );
    const synced = await factory.sync();
    expect(synced.result, JSON.stringify(synced)).toBe('applied');
    const payload = githubExample('issues', 'opened');
    payload.issue.author_association = 'NONE';
    expect(await runsOfDeliveries(server, [await github('issues', payload)])).toHaveLength(1);
    const bot = await slack({ bot_id: 'B0BOT', bot_profile: { id: 'B0BOT', name: 'ci-bot' } });
    expect(await runsOfDeliveries(server, [bot])).toHaveLength(1);
    // Still not external users: allowExternal was not written.
    const external = await slack({ user_team: 'T999OTHER' }, { is_ext_shared_channel: true });
    expect(await runsOfDeliveries(server, [external])).toHaveLength(0);
  });

  it('a policy key with a bad value refuses the tree at its line', async () => {
    const plan = await server.api('POST', `/factory-files/validate`, {
      files: [
        {
          path: 'factory.yaml',
          content: factoryYaml('triggerPolicy:\n  github:\n    authorAssociations: [MEMBR]\n'),
        },
        { path: 'agents/foreman/agent.md', content: FOREMAN },
        { path: 'runners/default.yaml', content: RUNNER },
      ],
    });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.valid).toBe(false);
    expect(plan.body.diagnostics[0]).toMatchObject({ line: 11, code: 'FF_INVALID_VALUE' });
    expect(plan.body.diagnostics[0].message).toContain('did you mean `MEMBER`?');
  });
});
