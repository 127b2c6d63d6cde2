import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('Run API on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('creates a run, answers it by id and lists it', async () => {
    const created = await s.api('POST', '/agent/runs', {
      prompt: 'Fix the flaky test\nin ci',
      config: { name: 'ci', model_id: 'm1' },
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ state: 'QUEUED' });
    expect(created.body.task_id).toBe(created.body.run_id);
    const got = await s.api('GET', `/agent/runs/${created.body.run_id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      run_id: created.body.run_id,
      title: 'Fix the flaky test',
      prompt: 'Fix the flaky test\nin ci',
      state: 'QUEUED',
      source: 'API',
      agent_config: { name: 'ci', model_id: 'm1' },
      creator: { type: 'user', display_name: 'admin' },
      scope: { type: 'Team' },
    });
    const page = await fetch(got.body.session_link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Fix the flaky test');
    const listed = await s.api('GET', '/agent/runs?name=ci&state=QUEUED');
    expect(listed.body.runs.map((r: { run_id: string }) => r.run_id)).toContain(created.body.run_id);
    expect(listed.body.page_info.has_next_page).toBe(false);
  });

  it('cancels a queued run, answering its id as a JSON string, and refuses a second cancel with 400', async () => {
    const created = await s.api('POST', '/agent/run', { prompt: 'cancel me' });
    const cancelled = await s.api('POST', `/agent/runs/${created.body.run_id}/cancel`, undefined, undefined, {
      'content-type': 'application/json',
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.headers.get('content-type')).toMatch(/application\/json/);
    expect(cancelled.body).toBe(created.body.run_id);
    expect((await s.api('GET', `/agent/runs/${created.body.run_id}`)).body.state).toBe('CANCELLED');
    const again = await s.api('POST', `/agent/runs/${created.body.run_id}/cancel`);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ status: 400, code: 'invalid_request', retryable: false });
    expect(again.headers.get('content-type')).toMatch(/application\/problem\+json/);
  });

  it('answers problem documents for missing prompt, bad key, unknown run, unknown route and wrong method', async () => {
    const noPrompt = await s.api('POST', '/agent/runs', { title: 'x' });
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.body.detail).toMatch(/prompt/);
    expect((await s.api('GET', '/agent/runs', undefined, 'ayk_wrong')).status).toBe(401);
    const missing = await s.api('GET', '/agent/runs/run_nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'resource_not_found', instance: '/api/v1/agent/runs/run_nope' });
    expect((await s.api('GET', '/agent/nothing-here')).status).toBe(404);
    const wrongMethod = await s.api('DELETE', '/agent/runs');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toContain('GET');
  });
});
