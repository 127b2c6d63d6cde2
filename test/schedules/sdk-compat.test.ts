/** The official TypeScript client (`oz-agent-sdk`) against a live server: every schedules method. */
import OzAPI from 'oz-agent-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.ts';
import { ENGINES } from '../support/db.ts';
import { runsOfSchedule, startScheduleServer, whenScheduled } from './support.ts';
import type { ScheduleTestServer } from './support.ts';

describe.each(ENGINES)('oz-agent-sdk schedules against Agentyard on %s', (engine) => {
  const clock = new ManualClock('2030-08-01T08:59:00.000Z');
  let s: ScheduleTestServer;
  let client: OzAPI;
  beforeAll(async () => {
    s = await startScheduleServer(engine, { clock });
    client = new OzAPI({ apiKey: s.adminKey, baseURL: s.apiUrl, maxRetries: 0 });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('create, list, retrieve, update, pause, resume and delete', async () => {
    const created = await client.agent.schedules.create({
      name: 'Daily Code Review',
      cron_schedule: '0 9 * * *',
      prompt: 'Review open pull requests and provide feedback',
      enabled: true,
      agent_config: { model_id: 'm1' },
    });
    expect(created).toMatchObject({
      name: 'Daily Code Review',
      cron_schedule: '0 9 * * *',
      enabled: true,
      prompt: 'Review open pull requests and provide feedback',
      agent_config: { model_id: 'm1' },
      history: { next_run: '2030-08-01T09:00:00.000Z', last_ran: null },
      scope: { type: 'Team' },
    });

    const { schedules } = await client.agent.schedules.list();
    expect(schedules.map((x) => x.id)).toContain(created.id);

    const retrieved = await client.agent.schedules.retrieve(created.id);
    expect(retrieved).toEqual(created);

    const updated = await client.agent.schedules.update(created.id, {
      name: 'Daily Code Review (late)',
      cron_schedule: '0 17 * * *',
      enabled: true,
      prompt: 'Review again',
    });
    expect(updated).toMatchObject({
      id: created.id,
      name: 'Daily Code Review (late)',
      cron_schedule: '0 17 * * *',
      history: { next_run: '2030-08-01T17:00:00.000Z' },
    });

    const paused = await client.agent.schedules.pause(created.id);
    expect(paused).toMatchObject({ enabled: false, history: { next_run: null } });
    const resumed = await client.agent.schedules.resume(created.id);
    expect(resumed).toMatchObject({ enabled: true, history: { next_run: '2030-08-01T17:00:00.000Z' } });

    // A fire is a run the client finds by schedule.
    clock.set('2030-08-01T17:00:00.000Z');
    await whenScheduled(s, async () => (await runsOfSchedule(s, created.id)).length === 1, 'the fire');
    const { runs } = await client.agent.runs.list({ schedule_id: created.id });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ source: 'SCHEDULED_AGENT', prompt: 'Review again' });
    expect((await client.agent.runs.retrieve(runs[0]!.run_id)).schedule).toEqual({
      schedule_id: created.id,
      schedule_name: 'Daily Code Review (late)',
      cron_schedule: '0 17 * * *',
    });
    expect((await client.agent.schedules.retrieve(created.id)).history?.last_ran).toBe('2030-08-01T17:00:00.000Z');

    expect(await client.agent.schedules.delete(created.id)).toEqual({ success: true });
    await expect(client.agent.schedules.retrieve(created.id)).rejects.toBeInstanceOf(OzAPI.NotFoundError);
  });

  it('surfaces an invalid cron as BadRequestError naming cron_schedule', async () => {
    const err = await client.agent.schedules
      .create({ name: 'bad', cron_schedule: 'every day at nine', prompt: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OzAPI.BadRequestError);
    expect((err as InstanceType<typeof OzAPI.BadRequestError>).status).toBe(400);
    expect(JSON.stringify((err as InstanceType<typeof OzAPI.BadRequestError>).error)).toMatch(/cron_schedule/);
  });
});
