import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { tree } from './support.ts';

function automation(triggers: string): string {
  return `---\ntriggers:\n${triggers}---\nGo.\n`;
}

describe('trigger normalisation', () => {
  it('rewrites aliases to canonical keys and bare lists to {in}, and records name aliases as deferred', async () => {
    const result = await validateFactory(
      tree({
        'automations/a/automation.md': automation(
          '  - provider: github\n    event: pull_request_opened\n    filter:\n      baseBranches: [main]\n      prNumbers: [1, 2]\n      labels: {not_in: [wip]}\n' +
            '  - provider: slack\n    event: reaction_added\n    filter:\n      channels: [eng]\n      emojis: [eyes]\n' +
            '  - provider: schedule\n    event: cron_fired\n    filter:\n      schedule_ids: {in: [sched-1]}\n',
        ),
      }),
    );
    expect(result.valid).toBe(true);
    expect(result.diagnostics.every((d) => d.severity === 'warning' && d.code === 'FF_NOT_SUPPORTED_HERE')).toBe(true);
    expect(result.definition!.automations[0]!.triggers).toEqual([
      {
        kind: 'provider',
        provider: 'github',
        event: 'pull_request_opened',
        filter: { base_branches: { in: ['main'] }, pr_numbers: { in: [1, 2] }, labels: { not_in: ['wip'] } },
        runsHere: false,
      },
      {
        kind: 'provider',
        provider: 'slack',
        event: 'reaction_added',
        filter: { channel_ids: { in: ['eng'] }, emojis: { in: ['eyes'] } },
        runsHere: false,
      },
      { kind: 'schedule', provider: 'schedule', event: 'cron_fired', schedule: null, scheduleIds: ['sched-1'] },
    ]);
    expect(result.deferredResolutions).toEqual([
      {
        file: 'automations/a/automation.md',
        path: '/triggers/1/filter/channels',
        field: 'channels',
        kind: 'slack_name_alias',
      },
    ]);
  });

  it('keeps an inline schedule with its name and cron', async () => {
    const result = await validateFactory(
      tree({
        'automations/a/automation.md': automation(
          '  - provider: schedule\n    event: cron_fired\n    schedule: {name: nightly, cron: "0 3 * * *"}\n',
        ),
      }),
    );
    expect(result.definition!.automations[0]!.triggers).toEqual([
      {
        kind: 'schedule',
        provider: 'schedule',
        event: 'cron_fired',
        schedule: { name: 'nightly', cron: '0 3 * * *' },
        scheduleIds: [],
      },
    ]);
  });
});
