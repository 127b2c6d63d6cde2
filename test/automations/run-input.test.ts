import { describe, expect, it } from 'vitest';
import { automationRunBase } from '../../src/automations/run-input.ts';
import { runConfigFor } from '../../src/factories/apply/run-config.ts';

describe('what a run started by an automation has in common, whatever fired it', () => {
  const config = runConfigFor(
    {
      harness: {
        type: 'claude',
        model: 'claude-sonnet-4',
        reasoningLevel: 'high',
        auth: { source: 'managedSecret', secretName: 'ANTHROPIC' },
      },
      runner: 'linux-small',
      runnerSource: 'file',
      environmentId: null,
      secrets: ['GH_TOKEN'],
      mcpServers: { docs: { warpId: 'mcp-1' } },
      workerHost: 'my-worker',
    },
    'nightly-triage',
  );
  const automation = { id: 'auto_1', team_id: 'team_1', factory_id: 'fac_1', name: 'nightly-triage', config };

  it('starts from the run configuration the reconciler stored, the automation as creator, its agent prompt as base prompt', () => {
    expect(automationRunBase(automation, 'You are the foreman.')).toEqual({
      teamId: 'team_1',
      factoryId: 'fac_1',
      automationId: 'auto_1',
      creator: { type: 'service_account', id: 'auto_1', displayName: 'automation nightly-triage', email: null },
      config: {
        name: 'nightly-triage',
        harness: { type: 'claude', model_id: 'claude-sonnet-4', reasoning_level: 'high' },
        harness_auth_secrets: { claude_auth_secret_name: 'ANTHROPIC' },
        runner_id: 'linux-small',
        mcp_servers: { docs: { warp_id: 'mcp-1' } },
        worker_host: 'my-worker',
        base_prompt: 'You are the foreman.',
      },
    });
  });

  it('keeps a base prompt the configuration names, and adds none when the agent has no prompt', () => {
    expect(
      automationRunBase({ ...automation, config: { ...config, base_prompt: 'Own prompt.' } }, 'You are the foreman.')
        .config.base_prompt,
    ).toBe('Own prompt.');
    expect(automationRunBase(automation, null).config).toEqual(config);
    expect(automationRunBase(automation, '').config).not.toHaveProperty('base_prompt');
  });

  it('never changes the stored configuration', () => {
    const before = structuredClone(config);
    automationRunBase(automation, 'You are the foreman.');
    expect(config).toEqual(before);
  });
});
