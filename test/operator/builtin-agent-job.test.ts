/**
 * A Kubernetes Job of the built-in agent: the command runs the agent script with the image's `node`, and the
 * instance's model key travels in the per-run Secret (secretEnv), never in the Job spec's plain environment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SCRIPT } from '../../src/execution/harnesses/agentyard.ts';
import { prepareJobInvocation } from '../../src/operator/harness.ts';
import { getRunById } from '../../src/runs/sql.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const KEY = 'sk-job-0123456789abcdef';

describe('the built-in agent as a Job', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer('pglite');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('puts the key in the per-run Secret and runs the script with node', async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'hello', config: { harness: { type: 'agentyard' } } });
    expect(created.status, created.text).toBe(200);
    const run = (await getRunById(s.server.ctx.db, created.body.run_id))!;
    const invocation = await prepareJobInvocation(
      { db: s.server.ctx.db, secrets: s.server.services.secrets, sessionLink: (id) => `http://x/${id}` },
      run,
      { id: 'exe_01aaaaaaaaaaaaaaaaaaaaaaaa', attempt: 1, harness: 'agentyard' },
      {
        defaultHarness: 'agentyard',
        bins: { claude: 'claude', codex: 'codex', gemini: 'gemini', command: '', agentyard: 'node' },
        commandArgs: [],
        builtin: {
          baseUrl: 'http://models.internal:8000/v1',
          apiKey: KEY,
          model: 'm',
          maxTurns: 5,
          deadlineMs: 60_000,
          requestTimeoutMs: 30_000,
        },
      },
    );
    expect(invocation.command).toEqual(['node', AGENT_SCRIPT]);
    expect(invocation.secretEnv.AGENTYARD_OPENAI_API_KEY).toBe(KEY);
    expect(invocation.env.AGENTYARD_OPENAI_BASE_URL).toBe('http://models.internal:8000/v1');
    expect(JSON.stringify(invocation.env)).not.toContain(KEY);
    expect(invocation.stdin).not.toContain(KEY);
    expect(JSON.parse(invocation.stdin!.split('\n')[0]!)).toMatchObject({ format: 'agentyard.agent/v1', model: 'm' });
  });
});
