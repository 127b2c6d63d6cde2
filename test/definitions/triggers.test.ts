import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { tree } from './support.ts';

function automation(triggers: string): string {
  return `---\ntriggers:\n${triggers}---\nGo.\n`;
}

describe('payload filter keys that look like operators', () => {
  const hook = 'wh_01jz8k2m3n4p5q6r7s8t9v0w1x';
  const filtered = (payload: string) =>
    automation(
      `  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${hook}]\n      payload:\n${payload}`,
    );

  it('warns at the key line with the known operators and a did-you-mean, and still applies', async () => {
    const result = await validateFactory(
      tree({
        'automations/a/automation.md': filtered(
          '        build:\n          count: { gt: 5 }\n          status: { ne: passed }\n          $regex: x\n',
        ),
      }),
    );
    expect(result.valid).toBe(true);
    const warnings = result.diagnostics
      .filter((d) => d.code === 'FF_INVALID_FILTER')
      .map((d) => [d.severity, d.line, d.column, d.message]);
    expect(warnings).toEqual([
      [
        'warning',
        9,
        20,
        expect.stringMatching(
          /^`payload\.build\.count\.gt`: `gt` is read as a payload field named `gt`, not as an operator \(the operators are `in`, `not_in` and `exists`\) To match a field of that name, write the key as `"\/gt"`\.$/,
        ),
      ],
      [
        'warning',
        10,
        21,
        expect.stringContaining(
          '`ne` is read as a payload field named `ne`, not as an operator (the operators are `in`, `not_in` and `exists`); did you mean `not_in`?',
        ),
      ],
      ['warning', 11, 11, expect.stringContaining('write the key as `"/$regex"`')],
    ]);
  });

  it('takes a key written "/name" as the field, without a warning', async () => {
    const result = await validateFactory(
      tree({ 'automations/a/automation.md': filtered('        count:\n          "/gt": 5\n          "/in": [a]\n') }),
    );
    expect(result.valid).toBe(true);
    expect(result.diagnostics.filter((d) => d.code === 'FF_INVALID_FILTER')).toEqual([]);
    const [trigger] = result.definition!.automations[0]!.triggers;
    expect(trigger).toMatchObject({ payload: { count: { '/gt': 5, '/in': ['a'] } } });
  });
});

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
    // GitHub, Slack and Linear triggers fire here: no warning about them.
    expect(result.diagnostics).toEqual([]);
    expect(result.definition!.automations[0]!.triggers).toEqual([
      {
        kind: 'provider',
        provider: 'github',
        event: 'pull_request_opened',
        filter: { base_branches: { in: ['main'] }, pr_numbers: { in: [1, 2] }, labels: { not_in: ['wip'] } },
        runsHere: true,
      },
      {
        kind: 'provider',
        provider: 'slack',
        event: 'reaction_added',
        filter: { channel_ids: { in: ['eng'] }, emojis: { in: ['eyes'] } },
        runsHere: true,
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
