/**
 * Issue 24, point 5: a member-role key named any team secret in `harness_auth_secrets` and got it into its
 * agent. A run now receives only secrets its creator may give (docs/security.md, "Secrets").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { ApiResponse, TestServer } from '../support/server.ts';

const claudeWith = (secretName: string) => ({
  harness: { type: 'claude' },
  harness_auth_secrets: { claude_auth_secret_name: secretName },
});

function execution(secretName: string) {
  return {
    harness: {
      type: 'claude',
      model: 'claude-model',
      reasoningLevel: null,
      auth: { source: 'managedSecret', secretName },
    },
    runner: null,
    runnerSource: null,
    environmentId: null,
    secrets: [],
    mcpServers: {},
    workerHost: null,
  };
}

function expectSecretRefused(res: ApiResponse, name: string): void {
  expect(res.status, res.text).toBe(404);
  expect(res.body).toMatchObject({ code: 'secret_not_found', status: 404 });
  expect(res.body.detail).toBe(
    `no managed secret named "${name}" that this key may give to a run (a team admin grants one to the team's agents in a factory definition)`,
  );
}

describe.each(ENGINES)('secrets a run may receive on %s', (engine) => {
  let s: TestServer;
  let member: string;
  let factoryId: string;
  beforeAll(async () => {
    s = await startTestServer(engine);
    member = (await s.api('POST', '/api-keys', { name: 'member', role: 'member' })).body.key;
    for (const name of ['agent-key', 'deploy-key', 'other-agent-key'])
      expect((await s.api('PUT', `/secrets/${name}`, { value: `${name}-value-123` })).status).toBe(201);
    const teamId = (await s.api('GET', '/whoami')).body.team.id;
    // Two applied factories: one grants agent-key to its foreman, the other grants other-agent-key.
    factoryId = 'fac_grants';
    const definition = (agentSecret: string) =>
      JSON.stringify({
        foreman: 'lead',
        agents: [{ name: 'lead', prompt: 'You lead.', execution: execution(agentSecret) }],
        automations: [],
      });
    await s.server.ctx.db.query(
      `INSERT INTO factories (id, team_id, name, source, state, definition)
       VALUES ($1, $2, 'grants', '{"type":"managed"}', 'applied', $3), ('fac_other', $2, 'other', '{"type":"managed"}', 'applied', $4)`,
      [factoryId, teamId, definition('agent-key'), definition('other-agent-key')],
    );
  });
  afterAll(async () => {
    await s?.close();
  });

  it('refuses a member naming a secret no factory grants, exactly as one that does not exist', async () => {
    expectSecretRefused(
      await s.api('POST', '/agent/runs', { prompt: 'x', config: claudeWith('deploy-key') }, member),
      'deploy-key',
    );
    expectSecretRefused(
      await s.api('POST', '/agent/runs', { prompt: 'x', config: claudeWith('no-such-key') }, member),
      'no-such-key',
    );
    // Python SDK 0.11's form, and the alias route.
    expectSecretRefused(
      await s.api(
        'POST',
        '/agent/run',
        { prompt: 'x', config: { harness: { type: 'claude', auth_secret_name: 'deploy-key' } } },
        member,
      ),
      'deploy-key',
    );
    const runs = await s.api('GET', '/agent/runs', undefined, member);
    expect(runs.body.runs).toEqual([]);
  });

  it('lets a member name a secret a factory of the team grants to its agents', async () => {
    const res = await s.api('POST', '/agent/runs', { prompt: 'x', config: claudeWith('agent-key') }, member);
    expect(res.status, res.text).toBe(200);
  });

  it('lets team admins name any secret of the team', async () => {
    const res = await s.api('POST', '/agent/runs', { prompt: 'x', config: claudeWith('deploy-key') });
    expect(res.status, res.text).toBe(200);
  });

  it("holds a run sent to a factory to that factory's grants", async () => {
    const foreman = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: 'work' }, member);
    expect(foreman.status, foreman.text).toBe(200);
    const run = await s.api('GET', `/agent/runs/${foreman.body.run_id}`, undefined, member);
    expect(run.body.agent_config.harness_auth_secrets).toEqual({ claude_auth_secret_name: 'agent-key' });
    expectSecretRefused(
      await s.api('POST', `/factories/${factoryId}/runs`, { prompt: 'work', config: claudeWith('deploy-key') }, member),
      'deploy-key',
    );
    // Granted by another factory, not by this one.
    expectSecretRefused(
      await s.api(
        'POST',
        `/factories/${factoryId}/runs`,
        { prompt: 'work', config: claudeWith('other-agent-key') },
        member,
      ),
      'other-agent-key',
    );
  });

  it('applies the same rule to schedules, whose runs start later', async () => {
    const schedule = (agentSecret: string) => ({
      name: `nightly-${agentSecret}`,
      cron_schedule: '0 9 * * *',
      prompt: 'x',
      agent_config: claudeWith(agentSecret),
    });
    expectSecretRefused(await s.api('POST', '/agent/schedules', schedule('deploy-key'), member), 'deploy-key');
    const granted = await s.api('POST', '/agent/schedules', schedule('agent-key'), member);
    expect(granted.status, granted.text).toBe(201);
    expectSecretRefused(
      await s.api('PUT', `/agent/schedules/${granted.body.id}`, { ...schedule('deploy-key'), enabled: true }, member),
      'deploy-key',
    );
    expect((await s.api('POST', '/agent/schedules', schedule('deploy-key'))).status).toBe(201);
  });

  it('answers 404 for run ids of no run of the team in parent_run_id and conversation_id', async () => {
    const parent = (await s.api('POST', '/agent/runs', { prompt: 'parent' })).body.run_id;
    for (const body of [
      { prompt: 'x', parent_run_id: 'run_doesnotexist' },
      { prompt: 'x', conversation_id: 'run_doesnotexist' },
    ]) {
      const res = await s.api('POST', '/agent/runs', body);
      expect(res.status, res.text).toBe(404);
      expect(res.body).toMatchObject({ code: 'resource_not_found' });
    }
    const child = await s.api('POST', '/agent/runs', { prompt: 'x', parent_run_id: parent, conversation_id: parent });
    expect(child.status, child.text).toBe(200);
  });
});
