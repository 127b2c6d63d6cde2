/**
 * The factory interface against the paths it stands beside (docs/orchestration.md, performance.md).
 *
 *   node bench/factory-interface.ts [SAMPLES] [--engines pglite,postgres]
 *
 * For each engine (PGlite in a temporary data directory; PostgreSQL on a server started for the run), with idle
 * executors on the in-process `noop` harness (this measures the platform, not an agent):
 * 1. `dispatch_agent` → child INPROGRESS against `POST /agent/runs` → INPROGRESS: a parent run holds a live run
 *    token (its execution a `sleep` on the `command` harness); one MCP client (the real SDK, streamable HTTP)
 *    calls `dispatch_agent`, alternated A B, B A with `POST /agent/runs`; each timed from the call to the first
 *    announcement of the new run on the server's bus (its INPROGRESS commit).
 * 2. A Slack thread reply → the resumed run INPROGRESS against an `app_mention` → its run INPROGRESS: signed
 *    Events API deliveries; each timed from the POST to the moment the run's execution (the first, or the one the
 *    reply queued) has started, read from the database the same way for both.
 * Prints p50/p99 of each pair and the ratio of the p50s (target ≤ 1.2), and for 1. the call's answer alone.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config.ts';
import { issueRunTokens } from '../src/execution/run-token.ts';
import { generateApiKey } from '../src/identity/api-keys.ts';
import { createLogger } from '../src/log.ts';
import { startServer } from '../src/server.ts';
import { startedOnBus } from './support/started-on-bus.ts';
import { openPostgres } from '../src/store/pg.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import type { PostgresServer } from '../test/support/postgres-server.ts';

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: { engines: { type: 'string', default: 'pglite,postgres' } },
});
const SAMPLES = Number(positionals[0] ?? 100);
const WARMUP = 10;
const ENGINES = values.engines.split(',') as ('pglite' | 'postgres')[];
const SLACK_SECRET = 'bench-slack-signing-secret';

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};

function row(name: string, a: number[], b: number[]): string {
  const x = stats(a);
  const y = stats(b);
  const ratio = x.p50 / y.p50;
  return `| ${name} | ${x.p50.toFixed(2)} / ${x.p99.toFixed(2)} | ${y.p50.toFixed(2)} / ${y.p99.toFixed(2)} | ${ratio.toFixed(2)}× ${ratio <= 1.2 ? '(met)' : '(not met)'} |`;
}

const FILES = {
  'factory.yaml':
    'schemaVersion: v1alpha1\nname: Bench\nrepositories:\n  - {owner: acme, name: api}\nintegrations:\n  - type: slack\nagentDefaults:\n  model: auto\n  runner: default\n',
  'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\n\nYou are the foreman.\n',
  'agents/implement/agent.md': '---\ndescription: Implements.\n---\n\nImplement it.\n',
  'runners/default.yaml': 'platform:\n  linux:\n    dockerImage: node:24\n',
  'automations/mention/automation.md':
    '---\ntriggers:\n  - provider: slack\n    event: app_mention\n---\n\nHandle it.\n',
};

async function benchEngine(engine: string, databaseUrl: string | undefined): Promise<string[]> {
  const root = mkdtempSync(path.join(tmpdir(), 'agentyard-bench-mcp-'));
  const key = generateApiKey();
  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: path.join(root, 'data'),
      databaseUrl,
      bootstrapApiKey: key,
      logLevel: 'silent',
      masterKey: 'b'.repeat(64),
    },
  );
  const server = await startServer(config, {
    log: createLogger('silent'),
    compose: {
      ingress: { limits: { senderPoints: 1_000_000 } },
      execution: {
        env: { AGENTYARD_SANDBOX: 'none' },
        settings: {
          concurrency: 8,
          harnesses: ['noop', 'command'],
          defaultHarness: 'noop',
          bins: { claude: 'claude', codex: 'codex', gemini: 'gemini', command: '/bin/sleep' },
          commandArgs: ['3600'],
        },
      },
      orchestration: { limits: { maxChildren: 1_000_000, maxActivePerFactory: 1_000_000 } },
    },
  });
  server.ctx.config.publicUrl = server.url;
  const db = server.ctx.db;
  const api = async (method: string, p: string, body?: unknown): Promise<any> => {
    const res = await fetch(`${server.url}/api/v1${p}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const bus = startedOnBus(server);
  try {
    await api('PUT', '/secrets/slack-signing', { value: SLACK_SECRET });
    await api('PUT', '/secrets/slack-bot', { value: 'xoxb-bench-unused' });
    const slack = await api('PUT', '/integrations/slack', {
      signing_secret_name: 'slack-signing',
      bot_token_secret_name: 'slack-bot',
    });
    const factory = await api('POST', '/factories', { name: 'bench', source: { type: 'managed' } });
    await api('POST', `/factories/${factory.id}/apply`, {
      files: Object.entries(FILES).map(([p, content]) => ({ path: p, content })),
      message: 'bench',
    });

    // 1. the parent: a run of the factory whose execution stays (sleep), with a token the bench holds
    const parent = await api('POST', `/factories/${factory.id}/runs`, {
      prompt: 'parent',
      config: { harness: { type: 'command' } },
    });
    const execution = await waitForValue(async () => {
      const res = await db.query<{ execution_id: string; team_id: string }>(
        `SELECT execution_id, team_id FROM runs WHERE id = $1 AND state = 'INPROGRESS'`,
        [parent.run_id],
      );
      return res.rows[0];
    });
    const tokens = await issueRunTokens(db, [
      { executionId: execution.execution_id, runId: parent.run_id, teamId: execution.team_id },
    ]);
    const client = new Client({ name: 'bench', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/api/v1/mcp/factory`), {
        requestInit: { headers: { Authorization: `Bearer ${tokens.get(execution.execution_id)}` } },
      }),
    );
    const dispatchTimes: number[] = [];
    const postTimes: number[] = [];
    // the answer to the call alone (the rest, to INPROGRESS, is the new run's claim and start)
    const dispatchAnswers: number[] = [];
    const postAnswers: number[] = [];
    const viaDispatch = async (i: number) => {
      const at = performance.now();
      const answer = (await client.callTool({
        name: 'dispatch_agent',
        arguments: { agent: 'implement', prompt: `bench child ${i}` },
      })) as { isError?: boolean; structuredContent?: { run_id: string }; content: unknown };
      const answered = performance.now();
      if (answer.isError || !answer.structuredContent) throw new Error(JSON.stringify(answer.content));
      const t = await bus.wait(answer.structuredContent.run_id);
      if (i >= WARMUP) {
        dispatchTimes.push(t - at);
        dispatchAnswers.push(answered - at);
      }
    };
    const viaPost = async (i: number) => {
      const at = performance.now();
      const created = await api('POST', '/agent/runs', { prompt: `bench run ${i}` });
      const answered = performance.now();
      const t = await bus.wait(created.run_id);
      if (i >= WARMUP) {
        postTimes.push(t - at);
        postAnswers.push(answered - at);
      }
    };
    for (let i = 0; i < SAMPLES + WARMUP; i++) {
      if (i % 2 === 0) {
        await viaDispatch(i);
        await viaPost(i);
      } else {
        await viaPost(i);
        await viaDispatch(i);
      }
    }
    await client.close();
    await api('POST', `/agent/runs/${parent.run_id}/cancel`);

    // 2. Slack: app_mention → run INPROGRESS, and a reply in its thread → the resumed run INPROGRESS
    const post = (event: Record<string, unknown>, eventId: string) => {
      const body = JSON.stringify({
        type: 'event_callback',
        team_id: 'T1',
        api_app_id: 'A1',
        event,
        event_id: eventId,
      });
      const at = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', SLACK_SECRET).update(`v0:${at}:${body}`).digest('hex');
      return fetch(slack.events_url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'x-slack-request-timestamp': String(at),
          'x-slack-signature': `v0=${signature}`,
        },
      });
    };
    const startedExecution = async (deliveryId: string | undefined, runId: string | undefined, attempt: number) =>
      waitForValue(async () => {
        const res = await db.query<{ run_id: string }>(
          `SELECT e.run_id FROM executions e JOIN runs r ON r.id = e.run_id
            WHERE ${deliveryId ? 'r.delivery_id = $1' : 'r.id = $1'} AND e.attempt = $2 AND e.started_at IS NOT NULL`,
          [deliveryId ?? runId ?? null, attempt],
        );
        return res.rows[0]?.run_id;
      }, true);
    const mentionTimes: number[] = [];
    const replyTimes: number[] = [];
    for (let i = 0; i < SAMPLES + WARMUP; i++) {
      const ts = `1700000${String(i).padStart(3, '0')}.000100`;
      let at = performance.now();
      const res = await post(
        { type: 'app_mention', user: 'U1', text: `<@U0BOT> task ${i}`, ts, channel: 'C1', event_ts: ts },
        `EvM${i}`,
      );
      const { delivery_id: deliveryId } = (await res.json()) as { delivery_id: string };
      const runId = await startedExecution(deliveryId, undefined, 1);
      if (i >= WARMUP) mentionTimes.push(performance.now() - at);
      await waitForValue(async () => {
        const r = await db.query(`SELECT 1 FROM runs WHERE id = $1 AND state = 'SUCCEEDED'`, [runId]);
        return r.rows.length > 0 ? true : undefined;
      });
      at = performance.now();
      await post(
        {
          type: 'message',
          channel: 'C1',
          channel_type: 'channel',
          user: 'U1',
          text: `more on ${i}`,
          ts: `1700001${String(i).padStart(3, '0')}.000200`,
          thread_ts: ts,
        },
        `EvR${i}`,
      );
      await startedExecution(undefined, runId, 2);
      if (i >= WARMUP) replyTimes.push(performance.now() - at);
    }
    return [
      row(`${engine}: dispatch_agent → child INPROGRESS vs POST /agent/runs → INPROGRESS`, dispatchTimes, postTimes),
      row(`${engine}: (of which) the call's answer, dispatch_agent vs POST /agent/runs`, dispatchAnswers, postAnswers),
      row(
        `${engine}: Slack thread reply → resumed run INPROGRESS vs app_mention → run INPROGRESS`,
        replyTimes,
        mentionTimes,
      ),
    ];
  } finally {
    bus.stop();
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

async function waitForValue<T>(read: () => Promise<T | undefined>, tight = false): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => (tight ? setImmediate(r) : setTimeout(r, 5)));
  }
}

let pg: PostgresServer | undefined;
try {
  if (ENGINES.includes('postgres')) pg = await startPostgresServer();
  console.log(
    `# Factory interface — ${new Date().toISOString()}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs, ${SAMPLES} samples`,
  );
  const rows: string[] = [];
  for (const engine of ENGINES) {
    let databaseUrl: string | undefined;
    if (engine === 'postgres') {
      const admin = await openPostgres({ connectionString: pg!.url, maxConnections: 1 });
      await admin.exec('CREATE DATABASE bench_mcp');
      await admin.close();
      databaseUrl = pg!.url.replace(/\/postgres$/, '/bench_mcp');
    }
    rows.push(...(await benchEngine(engine, databaseUrl)));
  }
  console.log(
    '\n| Path (ours vs the path beside it) | ours p50 / p99 ms | beside p50 / p99 ms | p50 ratio (target ≤ 1.2×) |',
  );
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await pg?.stop();
}
