/**
 * Schedule triggers end to end: a managed factory applied through the API (validation, reconciler, the
 * `webhooks.changed` notice) turns into schedules that fire runs of the automation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { ManualClock } from '../../src/kernel/clock.ts';
import { ENGINES } from '../support/db.ts';
import { baseFiles } from '../support/factory-tree.ts';
import { runsOfSchedule, startScheduleServer, waitForRuns, whenScheduled } from './support.ts';
import type { ScheduleTestServer } from './support.ts';

const FOREMAN = `---
agentType: FOREMAN
description: Does the chores.
---

You are the chores foreman.
`;

function automation(schedules: { name?: string; cron: string }[], body = 'Sweep stale branches.'): string {
  const triggers = schedules
    .map(
      (s) =>
        `  - provider: schedule\n    event: cron_fired\n    schedule:\n${s.name ? `      name: ${s.name}\n` : ''}      cron: "${s.cron}"\n`,
    )
    .join('');
  return `---\ntriggers:\n${triggers}---\n\n${body}\n`;
}

function files(extra: Record<string, string>): { path: string; content: string }[] {
  const all: Record<string, string> = {
    ...baseFiles({ name: 'Nightly chores', workerHost: 'chores-box' }),
    'agents/foreman/agent.md': FOREMAN,
    ...extra,
  };
  return Object.entries(all).map(([path, content]) => ({ path, content }));
}

interface Item {
  id: string;
  name: string;
  cron_schedule: string;
  factory_uid?: string;
  automation_name?: string;
  history: { next_run: string | null };
}

describe.each(ENGINES)('schedule triggers of an applied factory on %s', (engine) => {
  const clock = new ManualClock('2030-09-01T00:00:30.000Z');
  let s: ScheduleTestServer;
  let factoryId: string;

  const schedules = async (): Promise<Item[]> =>
    ((await s.api('GET', '/agent/schedules')).body.schedules as Item[]).filter((x) => x.factory_uid === factoryId);

  async function apply(extra: Record<string, string>, until: (items: Item[]) => boolean): Promise<Item[]> {
    const res = await s.api('POST', `/factories/${factoryId}/apply`, { files: files(extra) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toBe('applied');
    return whenScheduled(
      s,
      async () => {
        const items = await schedules();
        return until(items) ? items : undefined;
      },
      'the applied schedules',
    );
  }

  beforeAll(async () => {
    s = await startScheduleServer(engine, { clock });
    const created = await s.api('POST', '/factories', { name: 'chores', source: { type: 'managed' } });
    expect(created.status, created.text).toBe(201);
    factoryId = created.body.id;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('validates schedule triggers without a not-supported warning', async () => {
    const result = await validateFactory(
      files({ 'automations/sweep/automation.md': automation([{ name: 'nightly', cron: '0 2 * * *' }]) }),
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('fires runs of the automation and follows re-applies', async () => {
    const first = await apply(
      { 'automations/sweep/automation.md': automation([{ name: 'nightly', cron: '0 2 * * *' }, { cron: '@hourly' }]) },
      (x) => x.length === 2,
    );
    const nightly = first.find((x) => x.name === 'nightly')!;
    const hourly = first.find((x) => x.name === 'sweep')!;
    expect(nightly).toMatchObject({
      cron_schedule: '0 2 * * *',
      automation_name: 'sweep',
      history: { next_run: '2030-09-01T02:00:00.000Z' },
    });
    expect(hourly.history.next_run).toBe('2030-09-01T01:00:00.000Z');

    clock.set('2030-09-01T01:00:00.000Z');
    const [run] = await waitForRuns(s, hourly.id, 'the hourly fire');
    expect(run).toMatchObject({
      source: 'SCHEDULED_AGENT',
      prompt: 'Sweep stale branches.',
      factory_uid: factoryId,
      worker_host: 'chores-box',
      agent_config: { worker_host: 'chores-box', base_prompt: 'You are the chores foreman.' },
      schedule: { schedule_id: hourly.id, schedule_name: 'sweep', cron_schedule: '@hourly' },
    });
    expect(run!.automation_id).toBeTruthy();
    await s.scheduler.tick();
    expect(await runsOfSchedule(s, hourly.id)).toHaveLength(1);

    // Same name, new cron: updated in place. The unnamed one removed, a new name added.
    const second = await apply(
      {
        'automations/sweep/automation.md': automation([
          { name: 'nightly', cron: '30 3 * * *' },
          { name: 'weekly', cron: '@weekly' },
        ]),
      },
      (x) => x.length === 2 && x.some((i) => i.name === 'weekly'),
    );
    expect(second.find((x) => x.name === 'nightly')).toMatchObject({
      id: nightly.id,
      cron_schedule: '30 3 * * *',
      history: { next_run: '2030-09-01T03:30:00.000Z' },
    });
    expect(second.some((x) => x.id === hourly.id)).toBe(false);

    // The automation file removed: its schedules go.
    await apply({}, (x) => x.length === 0);
  });
});
