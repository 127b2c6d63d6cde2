import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.ts';
import { ENGINES } from '../support/db.ts';
import { runsOfSchedule, startScheduleServer, waitForRuns, whenScheduled } from './support.ts';
import type { ScheduleTestServer } from './support.ts';

const START = '2030-01-01T00:00:30.000Z';

describe.each(ENGINES)('schedules API on %s', (engine) => {
  const clock = new ManualClock(START);
  let s: ScheduleTestServer;
  beforeAll(async () => {
    s = await startScheduleServer(engine, { clock });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('creates (201), reads, lists by name, replaces, pauses, resumes and deletes a schedule', async () => {
    const created = await s.api('POST', '/agent/schedules', {
      name: 'Zebra nightly review',
      cron_schedule: '0 9 * * *',
      prompt: 'Review open pull requests',
      agent_config: { model_id: 'm1', name: 'reviews' },
      unknown_field: 'ignored',
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/application\/json/);
    const id = created.body.id as string;
    expect(id).toMatch(/^sch_/);
    expect(created.body).toMatchObject({
      name: 'Zebra nightly review',
      cron_schedule: '0 9 * * *',
      enabled: true,
      prompt: 'Review open pull requests',
      agent_config: { model_id: 'm1', name: 'reviews' },
      last_spawn_error: null,
      created_by: { type: 'user', display_name: 'admin' },
      updated_by: { type: 'user', display_name: 'admin' },
      history: { last_ran: null, next_run: '2030-01-01T09:00:00.000Z' },
      scope: { type: 'Team' },
    });
    expect(created.body.created_by.uid).toBeTruthy();
    expect(created.body.scope.uid).toMatch(/^team_/);

    const other = await s.api('POST', '/agent/schedules', {
      name: 'Alpha hourly',
      cron_schedule: '@hourly',
      prompt: 'tick',
      enabled: false,
    });
    expect(other.status).toBe(201);
    expect(other.body.history).toEqual({ last_ran: null, next_run: null });

    const got = await s.api('GET', `/agent/schedules/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);

    const list = await s.api('GET', '/agent/schedules');
    expect(list.status).toBe(200);
    const names = (list.body.schedules as { name: string }[]).map((x) => x.name);
    expect(names).toEqual([...names].sort());
    expect(names.indexOf('Alpha hourly')).toBeLessThan(names.indexOf('Zebra nightly review'));

    // PUT is a full replacement: the absent agent_config is cleared; a new cron is re-armed from now.
    clock.advance(60_000);
    const replaced = await s.api('PUT', `/agent/schedules/${id}`, {
      name: 'Zebra weekly review',
      cron_schedule: '@weekly',
      enabled: true,
      prompt: 'Weekly review',
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      id,
      name: 'Zebra weekly review',
      cron_schedule: '@weekly',
      enabled: true,
      prompt: 'Weekly review',
      agent_config: {},
    });
    expect(replaced.body.history.next_run).toBe('2030-01-06T00:00:00.000Z'); // the first Sunday after now
    expect(replaced.body.created_at).toBe(created.body.created_at);

    const paused = await s.api('POST', `/agent/schedules/${id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id, enabled: false, history: { next_run: null } });
    // Pausing again changes nothing; the Python SDK's empty JSON body is accepted.
    const pausedAgain = await s.api('POST', `/agent/schedules/${id}/pause`, undefined, undefined, {
      'content-type': 'application/json',
    });
    expect(pausedAgain.status).toBe(200);
    expect(pausedAgain.body.enabled).toBe(false);

    clock.set('2030-01-07T12:00:00.000Z');
    const resumed = await s.api('POST', `/agent/schedules/${id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ id, enabled: true, history: { next_run: '2030-01-13T00:00:00.000Z' } });

    const deleted = await s.api('DELETE', `/agent/schedules/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    expect((await s.api('GET', `/agent/schedules/${id}`)).status).toBe(404);
    expect((await s.api('DELETE', `/agent/schedules/${id}`)).status).toBe(404);
    expect((await s.api('POST', `/agent/schedules/${id}/resume`)).status).toBe(404);
    expect((await s.api('DELETE', `/agent/schedules/${other.body.id}`)).status).toBe(200);
  });

  it('refuses invalid requests with invalid_request naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ name: 'x', cron_schedule: '0 9 * *', prompt: 'p' }, /cron_schedule.*5 fields/],
      [{ name: 'x', cron_schedule: '0 0 9 * * *', prompt: 'p' }, /cron_schedule/],
      [{ name: 'x', cron_schedule: 'TZ=Europe/Paris 0 9 * * *', prompt: 'p' }, /cron_schedule.*UTC/],
      [{ name: 'x', cron_schedule: '@every soon', prompt: 'p' }, /cron_schedule/],
      [{ name: 'x', cron_schedule: '', prompt: 'p' }, /cron_schedule/],
      [{ name: 'x', prompt: 'p' }, /cron_schedule/],
      [{ name: '  ', cron_schedule: '@daily', prompt: 'p' }, /name/],
      [{ cron_schedule: '@daily', prompt: 'p' }, /name/],
      [{ name: 'x', cron_schedule: '@daily' }, /prompt/],
      [
        { name: 'x', cron_schedule: '@daily', prompt: 'p', agent_config: { idle_timeout_minutes: 99 } },
        /agent_config\.idle_timeout_minutes/,
      ],
      [
        { name: 'x', cron_schedule: '@daily', prompt: 'p', agent_config: { mcp_servers: { a: {} } } },
        /agent_config\.mcp_servers\.a/,
      ],
      [{ name: 'x', cron_schedule: '@daily', prompt: 'p', metadata: { 'bad key': 'v' } }, /metadata/],
    ];
    for (const [body, detail] of cases) {
      const res = await s.api('POST', '/agent/schedules', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body, JSON.stringify(body)).toMatchObject({ code: 'invalid_request', status: 400 });
      expect(res.body.detail, JSON.stringify(body)).toMatch(detail);
    }
    // A skill instead of a prompt is enough.
    const skill = await s.api('POST', '/agent/schedules', {
      name: 'skilled',
      cron_schedule: '@daily',
      agent_config: { skill_spec: 'acme/repo:triage' },
    });
    expect(skill.status).toBe(201);
    expect(skill.body.prompt).toBe('');
    // PUT needs every field.
    const put = await s.api('PUT', `/agent/schedules/${skill.body.id}`, {
      name: 'skilled',
      cron_schedule: '@daily',
      agent_config: { skill_spec: 'acme/repo:triage' },
    });
    expect(put.status).toBe(400);
    expect(put.body.detail).toMatch(/enabled/);
    const badCron = await s.api('PUT', `/agent/schedules/${skill.body.id}`, {
      name: 'skilled',
      cron_schedule: '99 * * * *',
      enabled: true,
      prompt: 'p',
    });
    expect(badCron.status).toBe(400);
    expect(badCron.body.detail).toMatch(/cron_schedule.*minute/);
    await s.api('DELETE', `/agent/schedules/${skill.body.id}`);
    expect((await s.api('GET', '/agent/schedules/sch_missing')).body).toMatchObject({
      status: 404,
      code: 'resource_not_found',
    });
    expect((await s.api('GET', '/agent/schedules', undefined, 'ayk_wrong')).status).toBe(401);
  });

  it('fires one SCHEDULED_AGENT run per slot, visible by schedule_id; a paused schedule does not fire', async () => {
    clock.set('2030-02-01T10:59:59.000Z');
    const hourly = await s.api('POST', '/agent/schedules', {
      name: 'hourly triage',
      cron_schedule: '0 * * * *',
      prompt: 'Triage new issues',
      agent_config: { model_id: 'm2' },
      metadata: { team: 'platform' },
    });
    const paused = await s.api('POST', '/agent/schedules', {
      name: 'paused one',
      cron_schedule: '0 * * * *',
      prompt: 'never',
      enabled: false,
    });
    expect(hourly.body.history.next_run).toBe('2030-02-01T11:00:00.000Z');

    clock.advance(1000);
    const [run] = await waitForRuns(s, hourly.body.id, 'the first fire');
    expect(run).toMatchObject({
      source: 'SCHEDULED_AGENT',
      prompt: 'Triage new issues',
      agent_config: { model_id: 'm2' },
      metadata: { team: 'platform' },
      creator: { type: 'user', display_name: 'admin' },
      schedule: { schedule_id: hourly.body.id, schedule_name: 'hourly triage', cron_schedule: '0 * * * *' },
    });
    const single = await s.api('GET', `/agent/runs/${run!.run_id}`);
    expect(single.body.schedule).toEqual({
      schedule_id: hourly.body.id,
      schedule_name: 'hourly triage',
      cron_schedule: '0 * * * *',
    });

    // Another look at the same time fires nothing more.
    await s.scheduler.tick();
    expect(await runsOfSchedule(s, hourly.body.id)).toHaveLength(1);
    const after = await s.api('GET', `/agent/schedules/${hourly.body.id}`);
    expect(after.body.history).toEqual({ last_ran: '2030-02-01T11:00:00.000Z', next_run: '2030-02-01T12:00:00.000Z' });
    expect(after.body.last_spawn_error).toBeNull();

    clock.advance(3600_000);
    await whenScheduled(s, async () => (await runsOfSchedule(s, hourly.body.id)).length === 2, 'the second fire');
    await s.scheduler.tick();
    expect(await runsOfSchedule(s, paused.body.id)).toHaveLength(0);
    await s.api('DELETE', `/agent/schedules/${hourly.body.id}`);
    await s.api('DELETE', `/agent/schedules/${paused.body.id}`);
    // Deleting a schedule keeps the runs it started.
    expect(await runsOfSchedule(s, hourly.body.id)).toHaveLength(2);
  });

  it('records a spawn error when a run cannot be created, and still moves on to the next slot', async () => {
    clock.set('2030-03-01T00:00:00.000Z');
    const created = await s.api('POST', '/agent/schedules', {
      name: 'broken',
      cron_schedule: '@every 1m',
      prompt: 'p',
    });
    // A configuration that was valid when stored but is refused when the run is created.
    await s.server.ctx.db.query(
      `UPDATE schedules SET agent_config = '{"idle_timeout_minutes": 0}'::jsonb WHERE id = $1`,
      [created.body.id],
    );
    clock.advance(60_000);
    const failed = await whenScheduled(
      s,
      async () => {
        const res = await s.api('GET', `/agent/schedules/${created.body.id}`);
        return res.body.last_spawn_error ? res.body : undefined;
      },
      'the spawn error',
    );
    expect(failed.last_spawn_error).toMatch(/idle_timeout_minutes/);
    expect(failed.history).toEqual({ last_ran: null, next_run: '2030-03-01T00:02:00.000Z' });
    expect(await runsOfSchedule(s, created.body.id)).toHaveLength(0);
    await s.api('DELETE', `/agent/schedules/${created.body.id}`);
  });
  it("a member changes only their own schedules; a run's creator is whoever last set the prompt", async () => {
    clock.set('2030-04-01T00:00:00.000Z');
    const member = (await s.api('POST', '/api-keys', { name: 'mallory', role: 'member' })).body.key as string;
    const malloryUid = (await s.api('GET', '/whoami', undefined, member)).body.principal.uid as string;
    const adminUid = (await s.api('GET', '/whoami')).body.principal.uid as string;
    const body = { name: "the admin's", cron_schedule: '@every 1m', prompt: 'Summarise the week' };
    const admins = await s.api('POST', '/agent/schedules', body);
    expect(admins.status).toBe(201);
    const id = admins.body.id as string;

    // a member can read it, but neither rewrite, pause, resume nor delete it
    expect((await s.api('GET', `/agent/schedules/${id}`, undefined, member)).status).toBe(200);
    const attempts = [
      await s.api('PUT', `/agent/schedules/${id}`, { ...body, prompt: 'Post the secrets', enabled: true }, member),
      await s.api('POST', `/agent/schedules/${id}/pause`, undefined, member),
      await s.api('POST', `/agent/schedules/${id}/resume`, undefined, member),
      await s.api('DELETE', `/agent/schedules/${id}`, undefined, member),
    ];
    for (const res of attempts) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('schedule_not_owned');
      expect(res.body.detail).toContain(id);
    }
    const unchanged = await s.api('GET', `/agent/schedules/${id}`);
    expect(unchanged.body).toMatchObject({ prompt: 'Summarise the week', enabled: true });

    // a member's own schedule is theirs to change; an admin may change it too, and whoever set the prompt
    // last is the creator of the runs it starts
    const own = await s.api('POST', '/agent/schedules', { ...body, name: "mallory's", prompt: 'mine' }, member);
    expect(own.status).toBe(201);
    expect(own.body.prompt_set_by).toMatchObject({ uid: malloryUid });
    const edited = await s.api(
      'PUT',
      `/agent/schedules/${own.body.id}`,
      { ...body, name: "mallory's", prompt: 'still mine', enabled: true },
      member,
    );
    expect(edited.status, edited.text).toBe(200);
    const rewritten = await s.api('PUT', `/agent/schedules/${id}`, {
      ...body,
      prompt: 'Summarise the month',
      enabled: true,
    });
    expect(rewritten.status, rewritten.text).toBe(200);
    expect(rewritten.body.prompt_set_by).toMatchObject({ uid: adminUid });
    const byAdmin = await s.api('PUT', `/agent/schedules/${own.body.id}`, {
      ...body,
      name: "mallory's",
      prompt: 'changed by the admin',
      enabled: true,
    });
    expect(byAdmin.status, byAdmin.text).toBe(200);
    expect(byAdmin.body.created_by).toMatchObject({ uid: malloryUid });
    expect(byAdmin.body.prompt_set_by).toMatchObject({ uid: adminUid });
    // pausing and resuming set no prompt
    expect((await s.api('POST', `/agent/schedules/${own.body.id}/pause`, undefined, member)).status).toBe(200);
    const resumed = await s.api('POST', `/agent/schedules/${own.body.id}/resume`, undefined, member);
    expect(resumed.body.prompt_set_by).toMatchObject({ uid: adminUid });
    const back = await s.api(
      'PUT',
      `/agent/schedules/${own.body.id}`,
      { ...body, name: "mallory's", prompt: 'mine again', enabled: true },
      member,
    );
    expect(back.body.prompt_set_by).toMatchObject({ uid: malloryUid });

    clock.advance(60_000);
    const [adminRun] = await waitForRuns(s, id, "the admin's fire");
    const [memberRun] = await waitForRuns(s, own.body.id, "mallory's fire");
    expect(adminRun).toMatchObject({ prompt: 'Summarise the month', creator: { uid: adminUid } });
    expect(memberRun).toMatchObject({ prompt: 'mine again', creator: { uid: malloryUid } });

    expect((await s.api('DELETE', `/agent/schedules/${own.body.id}`, undefined, member)).status).toBe(200);
    expect((await s.api('DELETE', `/agent/schedules/${id}`)).status).toBe(200);
  });
});
