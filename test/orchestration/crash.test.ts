/**
 * A Slack thread outlives `kill -9` of the server: a real `agentyard serve` process runs the foreman that a Slack
 * `app_mention` started (the MCP stand-in agent on the `command` harness, in its sandbox) and is killed with
 * SIGKILL while the foreman works, after its first reply in the thread. A new process on the same PostgreSQL
 * database reaps the lost execution (`lease_expired`); a reply in the thread, sent to the new process, continues
 * the same run (no new run), and the foreman's answer lands in the same thread with the bot token, through
 * `@slack/web-api` on the Slack stand-in.
 */
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, whenRunsTold } from '../execution/support.ts';
import { afterCalls } from '../support/signals.ts';
import { SLACK_APP_MENTION } from '../integrations/fixtures.ts';
import { serveEnv, spawnAgentyard } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';
import { startSlackStandIn } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { MCP_AGENT, SDK_DIR, connectSlack, managedFactory, postSlackEvent, slackForemanFiles } from './support.ts';

const BOT_TOKEN = 'xoxb-4242-crash-bot-token';
const CHANNEL = SLACK_APP_MENTION.event.channel;
const THREAD = SLACK_APP_MENTION.event.ts;

const FILES = slackForemanFiles('Crash thread');

// The automation's run is named after it (`mention`). Attempt 1 answers in the thread and keeps working (the
// server is killed meanwhile); attempt 2 is the continuation a thread reply starts.
const PLAYBOOK = {
  mention: {
    '1': [{ call: 'reply', args: { text: 'On it, looking now.' } }, { sleep: 600 }],
    '2': [{ call: 'reply', args: { text: 'Back after the crash, you said: {{doc.prompt}}' } }, { result: 'Answered.' }],
  },
};

describe.runIf(ENGINES.includes('postgres'))('a Slack thread across kill -9 of the server on PostgreSQL', () => {
  let setup: TestServer;
  let chat: ChatApis;
  let eventsPath: string;
  let factoryId: string;
  const slackSecret = randomBytes(16).toString('hex');
  const spawned: AgentyardProcess[] = [];

  beforeAll(async () => {
    chat = await startSlackStandIn(BOT_TOKEN);
    // This process only sets things up: no evaluator, no executors. The spawned servers do the work.
    setup = await startTestServer('postgres', {
      compose: { automations: false, execution: { env: {}, settings: { harnesses: [] } } },
    });
    eventsPath = new URL(await connectSlack(setup, slackSecret, BOT_TOKEN)).pathname;
    factoryId = await managedFactory(setup, 'crash-thread', FILES);
  });
  afterAll(async () => {
    for (const p of spawned) await p.stop();
    await setup?.close();
    await chat?.close();
  });

  /** `agentyard serve` with every role, its agents the MCP stand-in; answers its URL once it listens. */
  async function serve(): Promise<{ process: AgentyardProcess; url: string }> {
    const process = spawnAgentyard(
      ['serve', '--port', '0', '--host', '127.0.0.1'],
      serveEnv(setup.database, {
        LOG_LEVEL: 'info',
        AGENTYARD_HARNESSES: 'command',
        AGENTYARD_DEFAULT_HARNESS: 'command',
        AGENTYARD_HARNESS_COMMAND_BIN: MCP_AGENT,
        AGENTYARD_AGENT_PASS_ENV: 'MCP_PLAYBOOK,MCP_SDK_DIR',
        MCP_PLAYBOOK: JSON.stringify(PLAYBOOK),
        MCP_SDK_DIR: SDK_DIR,
        AGENTYARD_SANDBOX_READ_ONLY_PATHS: realpathSync(path.join(ROOT, 'node_modules')),
        AGENTYARD_SLACK_API_URL: chat.slackUrl,
        AGENTYARD_LEASE_MS: '3000',
        AGENTYARD_HEARTBEAT_MS: '300',
        AGENTYARD_EXECUTOR_POLL_MS: '200',
      }),
    );
    spawned.push(process);
    const url = (await process.printed(/listening on (http:\/\/[\d.:]+)/, 'the server to listen', 120_000))[1]!;
    return { process, url };
  }

  const slackPost = (url: string, event: Record<string, unknown>, eventId: string) =>
    postSlackEvent(`${url}${eventsPath}`, slackSecret, event, eventId);

  const runsOfFactory = async () =>
    (
      await setup.server.ctx.db.query<{ id: string; state: string; status_message: { message?: string } | null }>(
        'SELECT id, state, status_message FROM runs WHERE factory_id = $1 ORDER BY created_at',
        [factoryId],
      )
    ).rows;

  it('continues the run in its thread after the server was killed mid-run', async () => {
    const first = await serve();
    const mention = await slackPost(first.url, SLACK_APP_MENTION.event, 'Ev0CRASH1');
    expect(mention.status, mention.text).toBe(202);

    // the foreman is at work: it answered in the thread once and keeps going
    await afterCalls(chat, () => chat.posts.length >= 1, { what: 'the first reply in the thread', timeoutMs: 90_000 });
    expect(chat.posts[0]).toMatchObject({
      api: 'slack chat.postMessage',
      authorization: `Bearer ${BOT_TOKEN}`,
      body: { channel: CHANNEL, thread_ts: THREAD },
    });
    const [foreman] = await runsOfFactory();
    expect(foreman?.state).toBe('INPROGRESS');

    first.process.child.kill('SIGKILL');
    await first.process.exited;

    // a new process takes over: the lost execution is reaped, the run ends ERROR (lease_expired)
    const second = await serve();
    // the serve processes tell their runs' changes over LISTEN/NOTIFY
    const lost = await whenRunsTold(
      setup,
      'the lost execution to be reaped',
      async () => (await runsOfFactory()).find((r) => r.id === foreman!.id && r.state === 'ERROR'),
      60_000,
    );
    expect(lost.status_message?.message ?? '').toMatch(/lease/i);

    // a person answers in the thread: the same run continues (no new run) and answers in the same thread
    const reply = {
      type: 'message',
      channel: CHANNEL,
      channel_type: 'channel',
      user: 'U123ABC456',
      text: 'Are you still there?',
      ts: '1515449700.000200',
      thread_ts: THREAD,
    };
    expect((await slackPost(second.url, reply, 'Ev0CRASH2')).status).toBe(202);
    // Slack retries the same event: recorded once
    expect((await slackPost(second.url, reply, 'Ev0CRASH2')).status).toBeLessThan(300);
    const done = await whenRunsTold(
      setup,
      'the continued run to finish',
      async () => (await runsOfFactory()).find((r) => r.id === foreman!.id && r.state === 'SUCCEEDED'),
      90_000,
    );
    expect(done.id).toBe(foreman!.id);
    expect(await runsOfFactory()).toHaveLength(1);
    const answers = chat.posts.filter((p) => String(p.body.text).includes('Back after the crash'));
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({
      api: 'slack chat.postMessage',
      authorization: `Bearer ${BOT_TOKEN}`,
      body: { channel: CHANNEL, thread_ts: THREAD },
    });
    expect(String(answers[0]!.body.text)).toContain('Are you still there?');
    const followups = await setup.server.ctx.db.query('SELECT id FROM run_followups WHERE run_id = $1', [foreman!.id]);
    expect(followups.rows).toHaveLength(1);
  }, 300_000);
});
