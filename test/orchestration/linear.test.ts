/**
 * Linear through the factory interface: an agent session starts the foreman; its question is an `elicitation`
 * activity of the session and its answer a `response` (agentActivityCreate through @linear/sdk, on a stand-in of
 * Linear's GraphQL API); the session's `prompted` event resumes the BLOCKED run and starts nothing.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startChatApis } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';
import type { TestServer } from '../support/server.ts';
import { post } from '../ingress/support.ts';
import { LINEAR_AGENT_SESSION_CREATED } from '../integrations/fixtures.ts';
import { waitForState } from '../execution/support.ts';
import { waitForCreatedRun } from '../support/run-events.ts';
import { AGENT_FILES, managedFactory, startMcpServer, usePlaybook } from './support.ts';

const LINEAR_KEY = 'lin_api_session_test_key';

usePlaybook({
  session: {
    '1': [{ call: 'ask_user', args: { question: 'Which browser shows the loop?' } }, { result: 'asked' }],
    '2': [{ call: 'reply', args: { text: 'Fixed it for: {{doc.prompt}}' } }, { result: 'done' }],
  },
});

describe.each(ENGINES)('a Linear agent session through the factory interface on %s', (engine) => {
  let s: TestServer;
  let apis: ChatApis;
  let eventsUrl: string;
  const secret = `lin_wh_${randomBytes(12).toString('hex')}`;
  let n = 0;
  const deliver = async (payload: Record<string, unknown>, event: string) => {
    const body = JSON.stringify({ ...payload, webhookTimestamp: Date.now() });
    const res = await post(eventsUrl, body, {
      'content-type': 'application/json',
      'linear-delivery': `0d1e2f3a-4b5c-4d6e-8f7a-${String(++n).padStart(12, '0')}`,
      'linear-event': event,
      'linear-signature': createHmac('sha256', secret).update(body).digest('hex'),
    });
    expect(res.status, res.text).toBe(202);
  };

  beforeAll(async () => {
    apis = await startChatApis({
      slackToken: 'xoxb-unused',
      channels: [],
      users: [],
      linearKey: LINEAR_KEY,
      teams: [],
      projects: [],
      states: [],
      issues: [],
    });
    process.env.AGENTYARD_LINEAR_API_URL = apis.linearUrl;
    s = await startMcpServer(engine);
    for (const [name, value] of Object.entries({ 'linear-hook': secret, 'linear-key': LINEAR_KEY }))
      expect((await s.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    const connection = await s.api('PUT', '/integrations/linear', {
      webhook_secret_name: 'linear-hook',
      api_key_secret_name: 'linear-key',
    });
    eventsUrl = connection.body.events_url;
    await managedFactory(s, 'linear', {
      ...AGENT_FILES,
      'factory.yaml': `schemaVersion: v1alpha1
name: Linear
repositories:
  - owner: acme
    name: api
integrations:
  - type: linear
agentDefaults:
  model: auto
  runner: default
`,
      'automations/session/automation.md': `---
triggers:
  - provider: linear
    event: agent_session_created
---

Work on the Linear issue.
`,
    });
  });
  afterAll(async () => {
    await s?.close();
    await apis?.close();
    delete process.env.AGENTYARD_LINEAR_API_URL;
  });

  it('asks in the session, resumes on its prompted event, and answers there', async () => {
    await deliver(LINEAR_AGENT_SESSION_CREATED, 'AgentSessionEvent');
    const runId = await waitForCreatedRun(
      s.server.ctx.bus,
      async () => {
        const res = await s.server.ctx.db.query<{ id: string }>(`SELECT id FROM runs WHERE source = 'LINEAR'`);
        return res.rows[0]?.id;
      },
      { what: 'the session run' },
    );
    const blocked = await waitForState(s, runId, ['BLOCKED', 'SUCCEEDED', 'FAILED', 'ERROR'], 60_000);
    expect(blocked.state, JSON.stringify(blocked.status_message)).toBe('BLOCKED');
    expect(apis.posts).toHaveLength(1);
    expect(apis.posts[0]).toMatchObject({
      api: 'linear agentActivityCreate',
      authorization: LINEAR_KEY,
      body: {
        agentSessionId: LINEAR_AGENT_SESSION_CREATED.agentSession.id,
        content: { type: 'elicitation', body: 'Which browser shows the loop?' },
      },
    });

    await deliver(
      {
        type: 'AgentSessionEvent',
        action: 'prompted',
        createdAt: '2025-07-01T12:10:00.000Z',
        organizationId: LINEAR_AGENT_SESSION_CREATED.organizationId,
        agentSession: LINEAR_AGENT_SESSION_CREATED.agentSession,
        agentActivity: { id: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b10', content: { type: 'prompt', body: 'Safari 17' } },
      },
      'AgentSessionEvent',
    );
    const done = await waitForState(s, runId, ['SUCCEEDED', 'FAILED'], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe('SUCCEEDED');
    expect(apis.posts).toHaveLength(2);
    expect(apis.posts[1]!.body).toMatchObject({ content: { type: 'response' } });
    expect(String((apis.posts[1]!.body.content as { body: string }).body)).toContain('Safari 17');
    const runs = await s.server.ctx.db.query(`SELECT id FROM runs WHERE source = 'LINEAR'`);
    expect(runs.rows).toHaveLength(1);
  });
});
