/**
 * Slack and Linear payloads as their documentation publishes them (ids kept, texts as shown there).
 * Slack: https://api.slack.com/events/app_mention (example event, wrapped in the Events API envelope of
 * https://api.slack.com/apis/events-api#callback-field). Linear: https://linear.app/developers/agents
 * (AgentSessionEvent `created` webhook); Issue and Comment `create` in the envelope of
 * https://linear.app/developers/webhooks with the fields of @linear/sdk's IssueWebhookPayload and
 * CommentWebhookPayload. Linear writes a mention in markdown as a profile link
 * (https://linear.app/<workspace>/profiles/<username>) and in an issue's `descriptionData` (ProseMirror) as a
 * `suggestion_userMentions` node carrying the user's id.
 */
import { runsOfDeliveries } from '../automations/support.ts';
import { DELIVERIES_EVALUATED_TOPIC } from '../../src/kernel/topics.ts';
import { askWhenPoked } from '../support/signals.ts';
import type { TestServer } from '../support/server.ts';

export const SLACK_APP_MENTION = {
  token: 'ZZZZZZWSxiZZZ2yIvs3peJ',
  team_id: 'T123ABC456',
  api_app_id: 'A123ABC456',
  event: {
    type: 'app_mention',
    user: 'U123ABC456',
    text: 'What is the hour of the pearl, <@U0LAN0Z89>? Please deploy the fix.',
    ts: '1515449522.000016',
    channel: 'C123ABC456',
    event_ts: '1515449522000016',
  },
  type: 'event_callback',
  authed_users: ['U0LAN0Z89'],
  event_id: 'Ev123ABC456',
  event_time: 1515449522000016,
};

export const LINEAR_AGENT_SESSION_CREATED = {
  type: 'AgentSessionEvent',
  action: 'created',
  createdAt: '2025-07-01T12:00:00.000Z',
  organizationId: '6d0b1a6e-6b8e-4f53-9c1a-0f2f5b7c8d90',
  oauthClientId: 'b6a6f1c2-6c1e-4a2e-8f3d-5c4b3a291807',
  appUserId: '0e8f7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
  agentSession: {
    id: 'f3c2b1a0-9e8d-4c7b-a6f5-e4d3c2b1a098',
    issue: {
      id: '2b4c6d8e-0f1a-4b3c-8d5e-7f9a1b3c5d7e',
      identifier: 'ENG-123',
      title: 'Fix the login redirect',
      teamId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
    },
    comment: { id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', body: '@agent please take this one' },
    creatorId: '4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a',
  },
  promptContext: '<issue identifier="ENG-123"><title>Fix the login redirect</title></issue>',
};

export const LINEAR_ORGANIZATION = '6d0b1a6e-6b8e-4f53-9c1a-0f2f5b7c8d90';
export const LINEAR_TEAM = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

/** A Linear `Comment` `create` webhook; `body` is the comment's markdown. */
export function linearCommentCreated(body: string, commentId = '5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b') {
  return {
    action: 'create',
    type: 'Comment',
    createdAt: '2025-07-01T12:05:00.000Z',
    actor: { id: '4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a', type: 'user', name: 'Carol Author' },
    data: {
      id: commentId,
      createdAt: '2025-07-01T12:05:00.000Z',
      updatedAt: '2025-07-01T12:05:00.000Z',
      body,
      issueId: '2b4c6d8e-0f1a-4b3c-8d5e-7f9a1b3c5d7e',
      userId: '4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a',
      reactionData: [],
      user: { id: '4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a', name: 'Carol Author' },
      issue: {
        id: '2b4c6d8e-0f1a-4b3c-8d5e-7f9a1b3c5d7e',
        identifier: 'ENG-123',
        title: 'Fix the login redirect',
        teamId: LINEAR_TEAM,
        team: { id: LINEAR_TEAM, key: 'ENG', name: 'Engineering' },
        url: 'https://linear.app/acme/issue/ENG-123/fix-the-login-redirect',
      },
    },
    url: `https://linear.app/acme/issue/ENG-123/fix-the-login-redirect#comment-${commentId.slice(0, 8)}`,
    organizationId: LINEAR_ORGANIZATION,
    webhookId: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  };
}

/** A ProseMirror paragraph mentioning users, as Linear's editor stores it in `descriptionData`. */
export function linearMentionDocument(users: { id: string; label: string }[]): string {
  return JSON.stringify({
    type: 'doc',
    content: [
      {
        type: 'paragraph',
        content: [
          { type: 'text', text: 'Please look at this, ' },
          ...users.map((u) => ({ type: 'suggestion_userMentions', attrs: { id: u.id, label: u.label } })),
        ],
      },
    ],
  });
}

/** A Linear `Issue` `create` webhook whose description mentions `users`. */
export function linearIssueCreated(users: { id: string; label: string }[], issueId: string) {
  return {
    action: 'create',
    type: 'Issue',
    createdAt: '2025-07-01T12:00:00.000Z',
    actor: { id: '4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a', type: 'user', name: 'Carol Author' },
    data: {
      id: issueId,
      createdAt: '2025-07-01T12:00:00.000Z',
      updatedAt: '2025-07-01T12:00:00.000Z',
      number: 124,
      title: 'Sign-in loops on Safari',
      description: `Please look at this, ${users.map((u) => `https://linear.app/acme/profiles/${u.label}`).join(' ')}`,
      descriptionData: linearMentionDocument(users),
      priority: 2,
      priorityLabel: 'High',
      identifier: 'ENG-124',
      url: 'https://linear.app/acme/issue/ENG-124/sign-in-loops-on-safari',
      teamId: LINEAR_TEAM,
      team: { id: LINEAR_TEAM, key: 'ENG', name: 'Engineering' },
      stateId: '11111111-2222-4333-8444-555555555555',
      state: { id: '11111111-2222-4333-8444-555555555555', name: 'Todo', type: 'unstarted', color: '#e2e2e2' },
      creatorId: '4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a',
      labelIds: [],
      labels: [],
      subscriberIds: ['4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a'],
      previousIdentifiers: [],
      reactionData: [],
    },
    url: 'https://linear.app/acme/issue/ENG-124/sign-in-loops-on-safari',
    organizationId: LINEAR_ORGANIZATION,
    webhookId: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  };
}

/** Waits until the delivery left the outbox and its integration job of `kind` (if any) is no longer pending. */
export async function evaluatedWithJob(server: TestServer, deliveryId: string, kind: string): Promise<void> {
  const { bus, integrationJobs } = server.server.services;
  // looked at after each evaluated batch and each pass of the integration jobs' runner
  await askWhenPoked(
    (poke) => {
      const offs = [
        bus.subscribe(DELIVERIES_EVALUATED_TOPIC, poke),
        ...(integrationJobs ? [integrationJobs.loop.on(poke)] : []),
      ];
      return () => {
        for (const off of offs) off();
      };
    },
    async () => {
      const res = await server.server.ctx.db.query<{ pending: boolean; job: string | null }>(
        `SELECT d.outbox_pending AS pending,
                (SELECT state FROM integration_jobs j WHERE j.delivery_id = d.id AND j.kind = $2) AS job
           FROM webhook_deliveries d WHERE d.id = $1`,
        [deliveryId, kind],
      );
      const row = res.rows[0]!;
      return !row.pending && row.job !== 'pending';
    },
    { what: `delivery ${deliveryId} evaluated (${kind})`, timeoutMs: 30_000 },
  );
}

/** The names of the automations whose runs the delivery started, sorted. */
export async function automationNamesOf(server: TestServer, deliveryId: string): Promise<string[]> {
  const runs = await runsOfDeliveries(server, [deliveryId]);
  const res = await server.server.ctx.db.query<{ name: string }>(
    'SELECT name FROM automations WHERE id = ANY($1::text[]) ORDER BY name',
    [runs.map((r) => r.automation_id)],
  );
  return res.rows.map((r) => r.name);
}
