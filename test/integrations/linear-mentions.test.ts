/**
 * `mentioned_user_ids` on Linear events end to end: Linear deliveries signed as Linear signs them (checked with
 * @linear/sdk's own verifier) reach automations filtering on mentioned users. An issue's `descriptionData`
 * carries the mentioned ids; a comment's markdown names users by profile link, looked up through @linear/sdk
 * (`users`) against a local stand-in of Linear's GraphQL API, off the outbox in a durable job.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsOfDeliveries } from '../automations/support.ts';
import { createGitFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { startChatApis } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';
import { ENGINES } from '../support/db.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import {
  automationNamesOf,
  evaluatedWithJob,
  LINEAR_TEAM,
  linearCommentCreated,
  linearIssueCreated,
} from './fixtures.ts';

const ALICE = { id: 'a11ce000-0000-4000-8000-000000000001', label: 'alice' };
const BOB = { id: 'b0b00000-0000-4000-8000-000000000002', label: 'bob' };

const FACTORY = `schemaVersion: v1alpha1
name: Linear mentions
repositories:
  - owner: acme
    name: web
integrations:
  - type: linear
agentDefaults:
  model: auto
  runner: default
`;

const ASK_ALICE = `---
triggers:
  - provider: linear
    event: comment_created
    filter:
      mentioned_user_ids: [${ALICE.id}]
---

Alice was asked in a comment.
`;

const ISSUE_FOR_ALICE = `---
triggers:
  - provider: linear
    event: issue_created
    filter:
      team_ids: [${LINEAR_TEAM}]
      mentioned_user_ids:
        in: [${ALICE.id}]
        not_in: [${BOB.id}]
---

An issue mentions Alice, and not Bob.
`;

describe.each(ENGINES)('Linear mentioned_user_ids on %s', (engine) => {
  let server: TestServer;
  let apis: ChatApis;
  let eventsUrl: string;
  const webhookSecret = `lin_wh_${randomBytes(16).toString('hex')}`;
  let deliveries = 0;

  beforeAll(async () => {
    apis = await startChatApis({
      slackToken: 'xoxb-unused',
      channels: [],
      users: [],
      linearKey: 'lin_api_mentions',
      teams: [{ id: LINEAR_TEAM, name: 'Engineering', key: 'ENG' }],
      projects: [],
      states: [],
      issues: [],
      linearUsers: [
        { id: ALICE.id, name: 'Alice Liddell', displayName: 'alice' },
        { id: BOB.id, name: 'Bob Builder', displayName: 'bob' },
      ],
    });
    process.env.AGENTYARD_LINEAR_API_URL = apis.linearUrl;
    server = await startTestServer(engine);
    for (const [name, value] of Object.entries({ 'linear-hook': webhookSecret, 'linear-key': 'lin_api_mentions' }))
      expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    const connection = await server.api('PUT', '/integrations/linear', {
      webhook_secret_name: 'linear-hook',
      api_key_secret_name: 'linear-key',
    });
    expect(connection.status, connection.text).toBe(200);
    eventsUrl = connection.body.events_url;
  });
  afterAll(async () => {
    await server?.close();
    await apis?.close();
    delete process.env.AGENTYARD_LINEAR_API_URL;
  });

  it('applies automations filtering on mentioned_user_ids', async () => {
    const git = await createGitFactory(server, {
      'factory.yaml': FACTORY,
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      'automations/ask-alice/automation.md': ASK_ALICE,
      'automations/issue-for-alice/automation.md': ISSUE_FOR_ALICE,
    });
    expect((await git.sync()).status.state).toBe('applied');
  });

  async function deliver(payload: Record<string, unknown>, event: string): Promise<string> {
    const body = JSON.stringify({ ...payload, webhookTimestamp: Date.now() });
    const signature = createHmac('sha256', webhookSecret).update(body).digest('hex');
    expect(new LinearWebhookClient(webhookSecret).verify(Buffer.from(body), signature)).toBe(true);
    const res = await post(eventsUrl, body, {
      'content-type': 'application/json',
      'linear-delivery': `7f8e9d0c-1b2a-4c3d-9e8f-${String(++deliveries).padStart(12, '0')}`,
      'linear-event': event,
      'linear-signature': signature,
    });
    expect(res.status, res.text).toBe(202);
    return res.body.delivery_id as string;
  }

  const evaluated = (deliveryId: string) => evaluatedWithJob(server, deliveryId, 'linear_mentions');
  const automationNames = (deliveryId: string) => automationNamesOf(server, deliveryId);

  const lookups = () => apis.calls.filter((c) => c === 'linear users').length;

  it('an issue whose description mentions Alice fires; one mentioning Bob too does not; no look-up needed', async () => {
    const before = lookups();
    const alice = await deliver(linearIssueCreated([ALICE], 'c0ffee00-0000-4000-8000-000000000124'), 'Issue');
    const both = await deliver(linearIssueCreated([ALICE, BOB], 'c0ffee00-0000-4000-8000-000000000125'), 'Issue');
    for (const id of [alice, both]) await evaluated(id);
    expect(await automationNames(alice)).toEqual(['issue-for-alice']);
    expect(await automationNames(both)).toEqual([]);
    expect(lookups()).toBe(before);
  });

  it('a comment naming Alice by profile link fires once her id is looked up; naming Bob or nobody does not', async () => {
    const before = lookups();
    const asked = await deliver(
      linearCommentCreated('Could [@Alice](https://linear.app/acme/profiles/Alice) take this one?'),
      'Comment',
    );
    const bob = await deliver(
      linearCommentCreated(
        'https://linear.app/acme/profiles/bob what do you think?',
        '6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9c',
      ),
      'Comment',
    );
    const nobody = await deliver(
      linearCommentCreated('Plain comment, cc @alice', '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d'),
      'Comment',
    );
    for (const id of [asked, bob, nobody]) await evaluated(id);
    expect(await automationNames(asked)).toEqual(['ask-alice']);
    expect(await automationNames(bob)).toEqual([]);
    expect(await automationNames(nobody)).toEqual([]);
    // One look-up per delivery that names someone; `@alice` in markdown mentions nobody and asks for none.
    expect(lookups() - before).toBe(2);
    const runs = await runsOfDeliveries(server, [asked]);
    expect((await server.api('GET', `/agent/runs/${runs[0]!.id}`)).body.source).toBe('LINEAR');
  });

  it('a key Linear refuses: the comment fires nothing and the connection says why', async () => {
    expect((await server.api('PUT', '/secrets/linear-key', { value: 'lin_api_revoked' })).status).toBeLessThan(300);
    try {
      const id = await deliver(
        linearCommentCreated('https://linear.app/acme/profiles/alice please', '8b9c0d1e-2f3a-4b4c-8d5e-6f7a8b9c0d1e'),
        'Comment',
      );
      await evaluated(id);
      expect(await automationNames(id)).toEqual([]);
      const job = await server.server.ctx.db.query<{ state: string; attempts: number }>(
        `SELECT state, attempts FROM integration_jobs WHERE delivery_id = $1`,
        [id],
      );
      expect(job.rows).toEqual([{ state: 'failed', attempts: 1 }]);
      const connection = await server.api('GET', '/integrations/linear');
      expect(connection.body.last_error).toContain(id);
      expect(connection.body.last_error).toContain('alice');
    } finally {
      await server.api('PUT', '/secrets/linear-key', { value: 'lin_api_mentions' });
    }
  });
});
