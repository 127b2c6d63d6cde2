import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFollowups } from '../../src/runs/sql.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('POST /agent/runs on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  const countRuns = async () =>
    Number((await s.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runs')).rows[0]!.n);

  it('answers the same run for the same Idempotency-Key and body, marking the replay', async () => {
    const body = { prompt: 'idempotent', config: { name: 'x', model_id: 'm' } };
    const first = await s.api('POST', '/agent/runs', body, undefined, { 'idempotency-key': 'k-1' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const before = await countRuns();
    // Member order does not make another body.
    const again = await s.api(
      'POST',
      '/agent/runs',
      { config: { model_id: 'm', name: 'x' }, prompt: 'idempotent' },
      undefined,
      {
        'idempotency-key': 'k-1',
      },
    );
    expect(again.status).toBe(200);
    expect(again.body.run_id).toBe(first.body.run_id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await countRuns()).toBe(before);
    // The alias route shares the keys.
    expect((await s.api('POST', '/agent/run', body, undefined, { 'idempotency-key': 'k-1' })).body.run_id).toBe(
      first.body.run_id,
    );
  });

  it('refuses the same Idempotency-Key with another body with 422 idempotency_key_reused', async () => {
    await s.api('POST', '/agent/runs', { prompt: 'one' }, undefined, { 'idempotency-key': 'k-2' });
    const other = await s.api('POST', '/agent/runs', { prompt: 'two' }, undefined, { 'idempotency-key': 'k-2' });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused', status: 422, retryable: false });
    expect(other.body.detail).toMatch(/Idempotency-Key/);
  });

  it('creates exactly one run for concurrent requests with the same key', async () => {
    const before = await countRuns();
    const body = { prompt: 'concurrent' };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        s.api('POST', '/agent/runs', body, undefined, { 'idempotency-key': 'k-concurrent' }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.run_id)).size).toBe(1);
    expect(await countRuns()).toBe(before + 1);
  });

  it('scopes idempotency keys to the team', async () => {
    const team = await s.api('POST', '/teams', { name: `idem-${engine}` });
    const otherKey = team.body.admin_key.key as string;
    const mine = await s.api('POST', '/agent/runs', { prompt: 'same' }, undefined, { 'idempotency-key': 'shared' });
    const theirs = await s.api('POST', '/agent/runs', { prompt: 'same' }, otherKey, { 'idempotency-key': 'shared' });
    expect(theirs.status).toBe(200);
    expect(theirs.body.run_id).not.toBe(mine.body.run_id);
  });

  it('names the field in validation errors', async () => {
    const cases: [unknown, RegExp][] = [
      [{ prompt: 'x', config: { idle_timeout_minutes: 'ten' } }, /config\.idle_timeout_minutes/],
      [{ prompt: 'x', config: { idle_timeout_minutes: 90 } }, /config\.idle_timeout_minutes/],
      [{ prompt: 'x', config: { mcp_servers: { gh: { command: 'a', url: 'http://b' } } } }, /config\.mcp_servers\.gh/],
      [{ prompt: 'x', config: { mcp_servers: { gh: { url: 'not a url' } } } }, /config\.mcp_servers\.gh\.url/],
      [{ prompt: 'x', skill: 'no-colon' }, /skill/],
      [{ prompt: 42 }, /prompt/],
      [{ prompt: 'x', metadata: { 'bad key!': 'v' } }, /metadata/],
      [
        { prompt: 'x', attachments: [{ file_name: 'a.txt', mime_type: 'text/plain', data: '***' }] },
        /attachments\[0\]\.data/,
      ],
      [{ prompt: 'x', attachments: [{ file_name: 'a.txt', data: 'aGk=' }] }, /attachments.*mime_type/],
      [{ prompt: '   ' }, /prompt/],
      [[], /body/],
    ];
    for (const [body, pattern] of cases) {
      const res = await s.api('POST', '/agent/runs', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.detail, JSON.stringify(body)).toMatch(pattern);
    }
  });

  it('ignores unknown fields at every level, and maps legacy client fields', async () => {
    const res = await s.api('POST', '/agent/runs', {
      prompt: 'tolerant',
      on_behalf_of: 'someone@example.com',
      some_future_field: { nested: true },
      team: true,
      interactive: false,
      mode: 'plan',
      config: {
        model_id: 'm',
        harness: { type: 'claude', auth_secret_name: 'claude-key' },
        future_knob: 3,
        skills: ['a:b'],
      },
      images: [{ data: Buffer.from('png-bytes').toString('base64'), mime_type: 'image/png' }],
    });
    expect(res.status, res.text).toBe(200);
    const run = (await s.api('GET', `/agent/runs/${res.body.run_id}`)).body;
    expect(run.agent_config.harness_auth_secrets).toEqual({ claude_auth_secret_name: 'claude-key' });
    expect(run.agent_config.harness).toEqual({ type: 'claude' });
    const attachments = (await s.api('GET', `/agent/runs/${res.body.run_id}/handoff/attachments`)).body.attachments;
    expect(attachments.map((a: { filename: string }) => a.filename)).toEqual(['image-1.png']);
  });

  it('generates the title from the prompt, or from the skill when there is no prompt', async () => {
    const long = 'x'.repeat(300);
    const a = await s.api('POST', '/agent/runs', { prompt: `\n\n  First line  \nsecond` });
    expect((await s.api('GET', `/agent/runs/${a.body.run_id}`)).body.title).toBe('First line');
    const b = await s.api('POST', '/agent/runs', { prompt: long });
    const title = (await s.api('GET', `/agent/runs/${b.body.run_id}`)).body.title as string;
    expect(title.length).toBeLessThanOrEqual(120);
    expect(title.endsWith('…')).toBe(true);
    const c = await s.api('POST', '/agent/runs', { skill: 'acme/repo:skills/triage/SKILL.md' });
    const run = (await s.api('GET', `/agent/runs/${c.body.run_id}`)).body;
    expect(run.agent_config).toMatchObject({ skill_spec: 'acme/repo:skills/triage/SKILL.md', name: 'triage' });
    expect(run.title).toBe('triage');
    expect(run.agent_skill).toEqual({ name: 'skills/triage/SKILL.md', full_path: 'acme/repo:skills/triage/SKILL.md' });
  });

  it('answers every RunItem field of the reference for GET /agent/runs/{id}', async () => {
    const created = await s.api('POST', '/agent/runs', {
      prompt: 'Inspect me',
      config: {
        name: 'inspect',
        model_id: 'm1',
        base_prompt: 'be brief',
        environment_id: 'env-1',
        worker_host: 'my-worker',
        mcp_servers: {
          github: { command: 'gh-mcp', args: ['--x'], env: { A: 'b' } },
          docs: { url: 'https://mcp.example.com/sse' },
        },
      },
      metadata: { ticket: 'T-9' },
    });
    const run = (await s.api('GET', `/agent/runs/${created.body.run_id}`)).body;
    const me = (await s.api('GET', '/whoami')).body;
    expect(run).toMatchObject({
      run_id: created.body.run_id,
      task_id: created.body.run_id,
      title: 'Inspect me',
      prompt: 'Inspect me',
      state: 'QUEUED',
      started_at: null,
      source: 'API',
      execution_location: 'REMOTE',
      creator: { type: 'user', uid: me.principal.uid, display_name: 'admin' },
      executor: { type: 'user', uid: me.principal.uid },
      scope: { type: 'Team', uid: me.team.id },
      agent_config: {
        name: 'inspect',
        model_id: 'm1',
        base_prompt: 'be brief',
        environment_id: 'env-1',
        worker_host: 'my-worker',
      },
      artifacts: [],
      metadata: { ticket: 'T-9' },
      worker_host: 'my-worker',
      is_run_type_cancellable: true,
    });
    expect(run.agent_config.mcp_servers.github).toEqual({ command: 'gh-mcp', args: ['--x'], env: { A: 'b' } });
    // a UUID, version 7 (time-ordered, so that its index grows at one end)
    expect(run.session_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(run.session_link).toMatch(new RegExp(`^${s.url}/sessions/${run.session_id}\\?exp=\\d+&sig=[\\w-]{43}$`));
    for (const field of ['created_at', 'updated_at']) expect(new Date(run[field]).toISOString()).toBe(run[field]);
    const page = await request(run.session_link);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    // The service's own workers are not a worker host.
    const hosted = await s.api('POST', '/agent/runs', { prompt: 'p', config: { worker_host: 'service' } });
    expect((await s.api('GET', `/agent/runs/${hosted.body.run_id}`)).body.worker_host).toBeUndefined();
  });

  it('stores follow-ups, lists them, and queues a finished run again', async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'steer me' });
    const runId = created.body.run_id as string;
    const first = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'also check the docs' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ run_id: runId, state: 'QUEUED' });
    expect(first.body.followup_id).toMatch(/^fu_/);
    expect((await s.api('POST', `/agent/runs/${runId}/followups`, { message: '  ' })).status).toBe(400);
    expect((await s.api('POST', `/agent/runs/${runId}/followups`, {})).body.detail).toMatch(/message/);
    await s.api('POST', `/agent/runs/${runId}/cancel`);
    const second = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'try again', mode: 'plan' });
    expect(second.body.state).toBe('QUEUED');
    const listed = await s.api('GET', `/agent/runs/${runId}/followups`);
    expect(listed.body.followups.map((f: { message: string; mode: string }) => [f.message, f.mode])).toEqual([
      ['also check the docs', 'normal'],
      ['try again', 'plan'],
    ]);
    const stored = await listFollowups(s.server.ctx.db, runId);
    expect(stored).toHaveLength(2);
    expect(stored.every((f) => f.consumed_at === null)).toBe(true);
    expect((await s.api('POST', '/agent/runs/run_missing/followups', { message: 'x' })).status).toBe(404);
  });

  it('refuses to cancel a PENDING run with a retryable 409 and Retry-After', async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'pending' });
    await s.server.ctx.db.query(`UPDATE runs SET state = 'PENDING' WHERE id = $1`, [created.body.run_id]);
    const res = await s.api('POST', `/agent/runs/${created.body.run_id}/cancel`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'conflict', retryable: true });
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('x-should-retry')).toBeNull();
  });

  it('runs as an agent identity of the team when agent_identity_uid is given, and 404s a foreign one', async () => {
    const agent = await s.api('POST', '/agent/identities', { name: 'release-bot' });
    expect(agent.status).toBe(201);
    const created = await s.api('POST', '/agent/runs', { prompt: 'as the bot', agent_identity_uid: agent.body.uid });
    const run = (await s.api('GET', `/agent/runs/${created.body.run_id}`)).body;
    expect(run.executor).toEqual({
      type: 'service_account',
      uid: agent.body.principal_id,
      display_name: 'release-bot',
    });
    expect(run.creator.type).toBe('user');
    const listed = await s.api('GET', `/agent/runs?executor=${agent.body.principal_id}`);
    expect(listed.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([created.body.run_id]);
    const missing = await s.api('POST', '/agent/runs', { prompt: 'x', agent_identity_uid: 'agt_nope' });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/agent_identity_uid/);
  });
});
