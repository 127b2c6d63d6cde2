import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { resolveExecution } from '../../src/definitions/resolve.ts';
import { tree, UID, webhookAutomation } from './support.ts';

describe('resolveExecution', () => {
  const level = (declared: object, base = '') => ({ declared, file: 'f', base });

  it('turns model into an oz harness and lets a later level override it', () => {
    const r = resolveExecution([level({ model: 'auto', runner: 'linux' }), level({ model: 'auto-genius' })]);
    expect(r.execution.harness).toEqual({ type: 'oz', model: 'auto-genius', reasoningLevel: null, auth: null });
    expect(r.execution.runner).toBe('linux');
  });

  it('merges sparse harness overrides and normalises claude-code', () => {
    const r = resolveExecution([
      level({
        harness: {
          type: 'claude-code',
          model: 'opus',
          reasoningLevel: 'high',
          auth: { source: 'managedSecret', secretName: 'k' },
        },
      }),
      level({ harness: { reasoningLevel: 'low' } }),
    ]);
    expect(r.execution.harness).toEqual({
      type: 'claude',
      model: 'opus',
      reasoningLevel: 'low',
      auth: { source: 'managedSecret', secretName: 'k' },
    });
    expect(r.problems).toEqual([]);
  });

  it('clears reasoningLevel and auth with null, keeps them when omitted', () => {
    const base = level({
      harness: { type: 'codex', model: 'gpt-5.3-codex', reasoningLevel: 'high', auth: { source: 'workerEnvironment' } },
    });
    expect(
      resolveExecution([base, level({ harness: { reasoningLevel: null, auth: null } })]).execution.harness,
    ).toMatchObject({ reasoningLevel: null, auth: null });
    expect(resolveExecution([base, level({ harness: { model: 'o4' } })]).execution.harness).toMatchObject({
      model: 'o4',
      reasoningLevel: 'high',
    });
  });

  it('drops the inherited model when the harness type changes, and requires a new one', () => {
    const r = resolveExecution([level({ model: 'auto' }, '/agentDefaults'), level({ harness: { type: 'gemini' } })]);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.origin).toEqual({ file: 'f', pointer: '/harness' });
    const ok = resolveExecution([
      level({ model: 'auto' }),
      level({ harness: { type: 'gemini', model: 'gemini-2.5-pro' } }),
    ]);
    expect(ok.execution.harness).toEqual({ type: 'gemini', model: 'gemini-2.5-pro', reasoningLevel: null, auth: null });
  });

  it('treats null and omitted runner/environmentId as inherit, workerHost null/"" as clear', () => {
    const r = resolveExecution([
      level({ model: 'm', runner: 'a', environmentId: 'env', workerHost: 'box' }),
      level({ runner: null, environmentId: null }),
      level({ workerHost: '' }),
    ]);
    expect(r.execution).toMatchObject({ runner: 'a', environmentId: 'env', workerHost: null });
    expect(resolveExecution([level({ model: 'm', workerHost: 'box' }), level({})]).execution.workerHost).toBe('box');
  });

  it('replaces secrets and mcpServers instead of merging', () => {
    const r = resolveExecution([
      level({ model: 'm', secrets: ['a', 'b'], mcpServers: { x: { warpId: '1' } } }),
      level({ secrets: [], mcpServers: { y: { warpId: '2' } } }),
    ]);
    expect(r.execution.secrets).toEqual([]);
    expect(r.execution.mcpServers).toEqual({ y: { warpId: '2' } });
  });
});

describe('validateFactory: resolved definition', () => {
  it('resolves agentDefaults → agent → automation and adds factory-level secrets and MCP servers', async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml':
          'name: T\nrepositories: [{owner: a, name: b}]\nsecrets: [factory-secret]\nmcpServers: {docs: {warpId: d1}}\n' +
          'agentDefaults:\n  model: auto\n  runner: linux\n  secrets: [default-secret]\n  workerHost: box-1\n',
        'agents/coder/agent.md':
          '---\nharness: {type: claude, model: opus}\nsecrets: [coder-secret]\nmcpServers: {search: {warpId: s1}}\n---\nCode.\n',
        'automations/hook/automation.md': webhookAutomation(
          UID,
          'agent: coder\nharness: {reasoningLevel: high}\nworkerHost: null\nsecrets: []\n',
        ),
      }),
    );
    expect(result.diagnostics).toEqual([]);
    const def = result.definition!;
    const foreman = def.agents.find((a) => a.name === 'foreman')!;
    expect(foreman.execution).toEqual({
      harness: { type: 'oz', model: 'auto', reasoningLevel: null, auth: null },
      runner: 'linux',
      runnerSource: 'file',
      environmentId: null,
      secrets: ['default-secret', 'factory-secret'],
      mcpServers: { docs: { warpId: 'd1' } },
      workerHost: 'box-1',
    });
    const coder = def.agents.find((a) => a.name === 'coder')!;
    expect(coder.agentType).toBe('CUSTOM');
    expect(coder.execution.secrets).toEqual(['coder-secret', 'factory-secret']);
    expect(coder.execution.mcpServers).toEqual({ docs: { warpId: 'd1' }, search: { warpId: 's1' } });
    const automation = def.automations[0]!;
    expect(automation.agent).toBe('coder');
    expect(automation.execution.harness).toEqual({ type: 'claude', model: 'opus', reasoningLevel: 'high', auth: null });
    expect(automation.execution.workerHost).toBeNull();
    expect(automation.execution.secrets).toEqual(['factory-secret']);
    expect(automation.triggers).toEqual([
      { kind: 'webhook', provider: 'webhook', event: 'received', webhookUid: UID, webhookName: null, payload: null },
    ]);
  });

  it('defaults: schemaVersion v1alpha1, agentType CUSTOM, automation agent = foreman, enabled true, webhook token mode', async () => {
    const result = await validateFactory(
      tree({
        'agents/foreman/agent.md': '---\nagentType: MAIN\n---\n',
        'automations/a/automation.md': webhookAutomation(UID),
        'webhooks/inbox.yaml': 'secretName: inbox-token\n',
      }),
    );
    expect(result.diagnostics).toEqual([]);
    const def = result.definition!;
    expect(def.schemaVersion).toBe('v1alpha1');
    expect(def.foreman).toBe('foreman');
    expect(def.agents[0]!.agentType).toBe('FOREMAN');
    expect(def.automations[0]).toMatchObject({ agent: 'foreman', enabled: true, prompt: 'Handle it.' });
    expect(def.webhooks).toEqual([
      {
        name: 'inbox',
        file: 'webhooks/inbox.yaml',
        authMode: 'token',
        signatureScheme: null,
        secretName: 'inbox-token',
        deliveryIdHeader: null,
        enabled: true,
      },
    ]);
    expect(def.factory.credentialStrategy).toBeUndefined();
    expect(def.factory.integrations).toBeUndefined();
  });

  it('marks runners that are not files as team runners and lists the check as not run', async () => {
    const result = await validateFactory(
      tree({ 'agents/foreman/agent.md': '---\nagentType: FOREMAN\nrunner: gpu-pool\n---\n' }),
    );
    expect(result.valid).toBe(true);
    expect(result.definition!.agents[0]!.execution).toMatchObject({ runner: 'gpu-pool', runnerSource: 'team' });
    expect(result.stateDependentChecksNotRun).toContainEqual({
      check: 'team_runner',
      file: 'agents/foreman/agent.md',
      path: '/runner',
      subject: 'gpu-pool',
    });
  });

  it('includes skills: shared ones on the definition, agent ones on their agent', async () => {
    const result = await validateFactory(
      tree({ 'skills/deploy/SKILL.md': 'shared', 'agents/foreman/skills/tools/lint/SKILL.md': 'mine' }),
    );
    expect(result.definition!.skills).toEqual([{ name: 'deploy', path: 'skills/deploy/SKILL.md', content: 'shared' }]);
    expect(result.definition!.agents[0]!.skills).toEqual([
      { name: 'lint', path: 'agents/foreman/skills/tools/lint/SKILL.md', content: 'mine' },
    ]);
  });
});
