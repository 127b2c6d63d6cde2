/**
 * Schedule triggers of automation files. The automation rows are written here as the reconciler writes them
 * at apply time (file-shaped triggers, run configuration), followed by its `webhooks.changed` notice.
 */
import { WEBHOOKS_CHANGED_TOPIC } from '../../src/kernel/topics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.ts';
import { ENGINES } from '../support/db.ts';
import { runsOfSchedule, startScheduleServer, waitForRuns, whenScheduled } from './support.ts';
import type { ScheduleTestServer } from './support.ts';

interface Item {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  factory_uid?: string;
  automation_name?: string;
  history: { last_ran: string | null; next_run: string | null };
}

describe.each(ENGINES)('automation schedule triggers on %s', (engine) => {
  const clock = new ManualClock('2030-06-01T00:00:30.000Z');
  let s: ScheduleTestServer;
  let teamId: string;
  const factoryId = 'fac_sched';

  const schedulesOfFactory = async (): Promise<Item[]> =>
    ((await s.api('GET', '/agent/schedules')).body.schedules as Item[]).filter((x) => x.factory_uid === factoryId);

  async function applyAutomation(a: {
    id: string;
    name: string;
    enabled?: boolean;
    prompt?: string;
    triggers: unknown[];
    config?: object;
  }): Promise<void> {
    await s.server.ctx.db.query(
      `INSERT INTO automations (id, team_id, factory_id, name, file, enabled, prompt, agent, config, triggers)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'foreman', $8, $9)
       ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled, prompt = excluded.prompt, config = excluded.config,
         triggers = excluded.triggers, updated_at = ay_now()`,
      [
        a.id,
        teamId,
        factoryId,
        a.name,
        `automations/${a.name}/automation.md`,
        a.enabled ?? true,
        a.prompt ?? `Run ${a.name}`,
        JSON.stringify(a.config ?? { name: a.name, model_id: 'auto-model' }),
        JSON.stringify(a.triggers),
      ],
    );
  }

  async function applied(until: (items: Item[]) => boolean, what: string): Promise<Item[]> {
    await s.server.ctx.bus.publish(WEBHOOKS_CHANGED_TOPIC, { factory_id: factoryId });
    // Syncs run one after another: once this one is done, so is every sync asked for before it, and none started
    // before a later clock change can write what it read before that change.
    await s.server.services.scheduleSync!.syncFactory(factoryId);
    return whenScheduled(
      s,
      async () => {
        const items = await schedulesOfFactory();
        return until(items) ? items : undefined;
      },
      what,
    );
  }

  beforeAll(async () => {
    s = await startScheduleServer(engine, { clock });
    teamId = (await s.api('GET', '/whoami')).body.team.id;
    await s.server.ctx.db.query(
      `INSERT INTO factories (id, team_id, name, source, state, definition) VALUES ($1, $2, 'sched', '{"type":"managed"}', 'applied', $3)`,
      [
        factoryId,
        teamId,
        JSON.stringify({ foreman: 'foreman', agents: [{ name: 'foreman', prompt: 'You are the foreman.' }] }),
      ],
    );
  });
  afterAll(async () => {
    await s?.close();
  });

  it('turns inline schedules into read-only schedules that fire runs of the automation', async () => {
    await applyAutomation({
      id: 'auto_nightly',
      name: 'nightly',
      prompt: 'Sweep stale branches',
      triggers: [
        { provider: 'schedule', event: 'cron_fired', schedule: { name: 'night', cron: '0 2 * * *' } },
        { provider: 'schedule', event: 'cron_fired', schedule: { cron: '@hourly' } },
        { provider: 'webhook', event: 'received', filter: { webhook_ids: ['wh_00000000000000000000000000'] } },
      ],
    });
    const items = await applied((x) => x.length === 2, 'two automation schedules');
    const night = items.find((x) => x.name === 'night')!;
    const hourly = items.find((x) => x.name === 'nightly')!; // the unnamed schedule is shown under the automation's name
    expect(night).toMatchObject({
      cron_schedule: '0 2 * * *',
      enabled: true,
      automation_name: 'nightly',
      history: { next_run: '2030-06-01T02:00:00.000Z' },
    });
    expect(hourly).toMatchObject({ cron_schedule: '@hourly', history: { next_run: '2030-06-01T01:00:00.000Z' } });

    for (const [method, suffix, body] of [
      ['PUT', '', { name: 'x', cron_schedule: '@daily', enabled: true, prompt: 'x' }],
      ['DELETE', '', undefined],
      ['POST', '/pause', undefined],
      ['POST', '/resume', undefined],
    ] as const) {
      const res = await s.api(method, `/agent/schedules/${night.id}${suffix}`, body);
      expect(res.status, `${method} ${suffix}`).toBe(409);
      expect(res.body.code).toBe('factory_read_only');
      expect(res.body.detail).toMatch(/automation "nightly"/);
      expect(res.headers.get('x-should-retry')).toBe('false');
    }

    clock.set('2030-06-01T01:00:00.000Z');
    const [run] = await waitForRuns(s, hourly.id, 'the hourly fire');
    expect(run).toMatchObject({
      source: 'SCHEDULED_AGENT',
      prompt: 'Sweep stale branches',
      title: 'nightly: schedule nightly',
      automation_id: 'auto_nightly',
      factory_uid: factoryId,
      agent_config: { name: 'nightly', model_id: 'auto-model', base_prompt: 'You are the foreman.' },
      creator: { type: 'service_account', uid: 'auto_nightly' },
      schedule: { schedule_id: hourly.id, schedule_name: 'nightly', cron_schedule: '@hourly' },
    });
    const byAutomation = await s.api('GET', '/agent/runs?automation_id=auto_nightly');
    expect(byAutomation.body.runs).toHaveLength(1);
    await s.scheduler.tick();
    expect(await runsOfSchedule(s, night.id)).toHaveLength(0);
  });

  it('keeps schedules in step with re-applies: same name updates in place, a new name replaces, a removed one goes', async () => {
    const before = await schedulesOfFactory();
    const night = before.find((x) => x.name === 'night')!;
    clock.set('2030-06-01T01:30:00.000Z');
    await applyAutomation({
      id: 'auto_nightly',
      name: 'nightly',
      prompt: 'Sweep stale branches',
      triggers: [
        { provider: 'schedule', event: 'cron_fired', schedule: { name: 'night', cron: '30 3 * * *' } },
        { provider: 'schedule', event: 'cron_fired', schedule: { name: 'weekly', cron: '@weekly' } },
      ],
    });
    const after = await applied(
      (x) => x.length === 2 && x.some((i) => i.name === 'weekly'),
      'the re-applied schedules',
    );
    const night2 = after.find((x) => x.name === 'night')!;
    expect(night2.id).toBe(night.id);
    expect(night2).toMatchObject({ cron_schedule: '30 3 * * *', history: { next_run: '2030-06-01T03:30:00.000Z' } });
    expect(after.find((x) => x.name === 'nightly')).toBeUndefined();
    expect(after.find((x) => x.name === 'weekly')!.id).not.toBe(before.find((x) => x.name === 'nightly')!.id);

    // Disabling the automation pauses its schedules; enabling it re-arms them from now.
    await applyAutomation({
      id: 'auto_nightly',
      name: 'nightly',
      enabled: false,
      triggers: [{ provider: 'schedule', event: 'cron_fired', schedule: { name: 'night', cron: '30 3 * * *' } }],
    });
    const paused = await applied((x) => x.length === 1 && !x[0]!.enabled, 'the paused schedule');
    expect(paused[0]).toMatchObject({ id: night.id, enabled: false, history: { next_run: null } });
    clock.set('2030-06-01T04:00:00.000Z');
    await s.scheduler.tick();
    expect(await runsOfSchedule(s, night.id)).toHaveLength(0);
    await applyAutomation({
      id: 'auto_nightly',
      name: 'nightly',
      enabled: true,
      triggers: [{ provider: 'schedule', event: 'cron_fired', schedule: { name: 'night', cron: '30 3 * * *' } }],
    });
    const resumed = await applied((x) => x.length === 1 && x[0]!.enabled, 'the re-enabled schedule');
    expect(resumed[0]!.history.next_run).toBe('2030-06-02T03:30:00.000Z');

    // Deleting the automation (or its factory) deletes its schedules.
    await s.server.ctx.db.query('UPDATE automations SET deleted_at = ay_now() WHERE id = $1', ['auto_nightly']);
    await applied((x) => x.length === 0, 'no schedules left');
  });

  it('starts one run per automation that selects a schedule by id, besides the schedule’s own run', async () => {
    clock.set('2030-07-01T00:00:10.000Z');
    const api = await s.api('POST', '/agent/schedules', {
      name: 'api minutely',
      cron_schedule: '* * * * *',
      prompt: 'own work',
    });
    expect(api.status).toBe(201);
    await applyAutomation({
      id: 'auto_follow',
      name: 'follow',
      prompt: 'Follow up on the minutely job',
      triggers: [{ provider: 'schedule', event: 'cron_fired', filter: { schedule_ids: [api.body.id] } }],
    });
    await applyAutomation({
      id: 'auto_follow_in',
      name: 'follow-in',
      prompt: 'Also follow',
      triggers: [
        { provider: 'schedule', event: 'cron_fired', filter: { schedule_ids: { in: [api.body.id, 'sch_other'] } } },
        // Two triggers selecting the same schedule still start one run per fire.
        { provider: 'schedule', event: 'cron_fired', filter: { schedule_ids: [api.body.id] } },
      ],
    });
    await applyAutomation({
      id: 'auto_off',
      name: 'off',
      enabled: false,
      triggers: [{ provider: 'schedule', event: 'cron_fired', filter: { schedule_ids: [api.body.id] } }],
    });
    await s.server.ctx.bus.publish(WEBHOOKS_CHANGED_TOPIC, { factory_id: factoryId });

    clock.set('2030-07-01T00:01:00.000Z');
    const runs = await waitForRuns(s, api.body.id, 'the fan-out', 3);
    await s.scheduler.tick();
    expect(await runsOfSchedule(s, api.body.id)).toHaveLength(3);
    const byAutomation = new Map(runs.map((r) => [r.automation_id ?? 'own', r]));
    expect([...byAutomation.keys()].sort()).toEqual(['auto_follow', 'auto_follow_in', 'own']);
    expect(byAutomation.get('own')).toMatchObject({ prompt: 'own work', source: 'SCHEDULED_AGENT' });
    expect(byAutomation.get('auto_follow')).toMatchObject({
      prompt: 'Follow up on the minutely job',
      source: 'SCHEDULED_AGENT',
      factory_uid: factoryId,
      schedule: { schedule_id: api.body.id, schedule_name: 'api minutely', cron_schedule: '* * * * *' },
    });
    await s.api('DELETE', `/agent/schedules/${api.body.id}`);
  });

  it("keeps the automation's concurrency: `{{schedule}}` names the fire's schedule, `skip` records why", async () => {
    clock.set('2030-08-01T00:00:10.000Z');
    // the automation's `concurrency` as an apply stores it: in the factory's applied definition
    await s.server.ctx.db.query(`UPDATE factories SET definition = definition || $2::jsonb WHERE id = $1`, [
      factoryId,
      JSON.stringify({
        automations: [{ name: 'sweeper', concurrency: { key: 'sweep-{{schedule}}', limit: 1, onNew: 'skip' } }],
      }),
    ]);
    await applyAutomation({
      id: 'auto_sweeper',
      name: 'sweeper',
      triggers: [{ provider: 'schedule', event: 'cron_fired', schedule: { name: 'sweep', cron: '@hourly' } }],
    });
    const sweep = (await applied((x) => x.some((i) => i.name === 'sweep'), 'the sweep schedule')).find(
      (x) => x.name === 'sweep',
    )!;
    clock.set('2030-08-01T01:00:00.000Z');
    const [first] = await waitForRuns(s, sweep.id, 'the first sweep');
    const run = (await s.api('GET', `/agent/runs/${first!.run_id}`)).body;
    expect(run.concurrency).toEqual({ key: 'sweep-sweep', limit: 1 });
    expect(run.state).toBe('QUEUED');

    // the first run has not ended: the next fire starts none, and the schedule says why
    clock.set('2030-08-01T02:00:00.000Z');
    const skipped = await whenScheduled(
      s,
      async () => {
        await s.scheduler.tick();
        const item = (await s.api('GET', `/agent/schedules/${sweep.id}`)).body;
        return item.history.next_run === '2030-08-01T03:00:00.000Z' ? item : undefined;
      },
      'the second fire',
    );
    expect(await runsOfSchedule(s, sweep.id)).toHaveLength(1);
    expect(skipped.last_spawn_error).toBe(
      `automation auto_sweeper: skipped: concurrency key sweep-sweep at limit 1 (onNew: skip; 1 run of the key not ended: ${first!.run_id})`,
    );
  });
});
