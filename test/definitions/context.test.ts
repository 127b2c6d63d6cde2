import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import type { ValidationContext } from '../../src/definitions/index.ts';
import { OTHER_UID, tree, UID, webhookAutomation } from './support.ts';

const files = () =>
  tree({
    'factory.yaml':
      'name: T\nrepositories: [{owner: a, name: b}]\nsecrets: [shared]\nagentDefaults:\n  model: auto\n  runner: team-pool\n',
    'webhooks/alerts.yaml': 'authMode: url_token\nsecretName: alerts-token\n',
    'automations/a/automation.md': webhookAutomation(UID),
  });

const lines = (diagnostics: { file: string; line: number; column: number; code: string; message: string }[]) =>
  diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code} ${d.message}`);

describe('state-dependent checks', () => {
  it('are skipped and listed without a context', async () => {
    const result = await validateFactory(files());
    expect(result.valid).toBe(true);
    expect(result.stateDependentChecksNotRun.map((c) => `${c.check}:${c.subject}`).sort()).toEqual(
      [
        'secret_exists:alerts-token',
        'secret_exists:shared',
        'secret_url_safe:alerts-token',
        'team_runner:team-pool',
        `webhook_uid:${UID}`,
      ].sort(),
    );
  });

  it('run with a context and point at the key that names the missing thing', async () => {
    const context: ValidationContext = {
      secretExists: async (name) => name === 'alerts-token',
      secretIsUrlSafe: () => false,
      knownWebhookUids: new Set([OTHER_UID]),
      teamRunnerExists: () => false,
    };
    const result = await validateFactory(files(), context);
    expect(result.stateDependentChecksNotRun).toEqual([]);
    expect(lines(result.diagnostics)).toEqual([
      `automations/a/automation.md:6:21 FF_INVALID_REFERENCE no webhook of this factory has the UID ${UID}`,
      'factory.yaml:3:11 FF_INVALID_REFERENCE no managed secret named `shared`',
      'factory.yaml:6:11 FF_INVALID_REFERENCE no runner named `team-pool`: neither runners/team-pool.yaml nor a team runner',
      'webhooks/alerts.yaml:2:13 FF_INVALID_VALUE secret `alerts-token` is not URL-safe; a `url_token` secret may hold only A-Z a-z 0-9 - . _ ~',
    ]);
  });

  it('accept what exists', async () => {
    const context: ValidationContext = {
      secretExists: () => true,
      secretIsUrlSafe: () => true,
      knownWebhookUids: new Set([UID]),
      teamRunnerExists: (name) => name === 'team-pool',
    };
    const result = await validateFactory(files(), context);
    expect(result.diagnostics).toEqual([]);
    expect(result.definition!.agents[0]!.execution.runnerSource).toBe('team');
  });

  it('a webhook file name in webhook_ids is a reference by name, valid offline and at apply', async () => {
    const input = tree({
      'webhooks/alerts.yaml': 'secretName: s\n',
      'automations/a/automation.md': webhookAutomation('alerts'),
    });
    for (const context of [undefined, { knownWebhookUids: new Set<string>() }]) {
      const result = await validateFactory(input, context);
      expect(result.diagnostics.filter((d) => d.file.startsWith('automations/'))).toEqual([]);
      expect(result.stateDependentChecksNotRun.filter((c) => c.check === 'webhook_uid')).toEqual([]);
      expect(result.definition!.automations[0]!.triggers[0]).toMatchObject({
        kind: 'webhook',
        webhookUid: null,
        webhookName: 'alerts',
      });
    }
  });

  it('a name no webhooks/ file has is refused offline, with the file name meant', async () => {
    const input = tree({
      'webhooks/alerts.yaml': 'secretName: s\n',
      'automations/a/automation.md': webhookAutomation('alert'),
    });
    const result = await validateFactory(input);
    expect(lines(result.diagnostics)).toEqual([
      'automations/a/automation.md:6:21 FF_INVALID_REFERENCE `alert` is neither a webhook file name (no webhooks/alert.yaml) nor a webhook UID (wh_ followed by 26 lower-case letters or digits); did you mean `alerts`?',
    ]);
  });
});
