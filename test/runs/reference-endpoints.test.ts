import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelCatalogue, DEFAULT_MODELS } from '../../src/runs/models.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe('AGENTYARD_MODELS', () => {
  it('takes comma-separated ids (the first is the default) or JSON, and refuses a default that is not listed', () => {
    expect(parseModelCatalogue(undefined)).toBe(DEFAULT_MODELS);
    expect(parseModelCatalogue('gpt-5, claude-sonnet-4-5')).toEqual({
      default_model_id: 'gpt-5',
      models: [
        { id: 'gpt-5', display_name: 'gpt-5', provider: 'OPENAI', vision_supported: true },
        { id: 'claude-sonnet-4-5', display_name: 'claude-sonnet-4-5', provider: 'ANTHROPIC', vision_supported: true },
      ],
    });
    const json = parseModelCatalogue(
      JSON.stringify({
        default_model_id: 'b',
        models: ['a', { id: 'b', display_name: 'Bee', provider: 'GOOGLE', vision_supported: false }],
      }),
    );
    expect(json.default_model_id).toBe('b');
    expect(json.models[1]).toEqual({ id: 'b', display_name: 'Bee', provider: 'GOOGLE', vision_supported: false });
    expect(() => parseModelCatalogue('{"default_model_id":"x","models":["a"]}')).toThrow(/default_model_id/);
    expect(() => parseModelCatalogue('[{"name":"a"}]')).toThrow(/models\[0\]\.id/);
    expect(() => parseModelCatalogue('{oops')).toThrow(/JSON/);
  });
});

describe.each(ENGINES)('reference endpoints on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine, { config: { agentModels: 'model-a,model-b' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('GET /agent/models answers the configured catalogue', async () => {
    const res = await s.api('GET', '/agent/models');
    expect(res.status).toBe(200);
    expect(res.body.default_model_id).toBe('model-a');
    // The configured models first, then the built-in catalogue (test/runs/model-catalogue.test.ts).
    expect(res.body.models.map((m: { id: string }) => m.id).slice(0, 3)).toEqual(['model-a', 'model-b', 'auto']);
  });

  it('GET /agent lists the agents of applied factories, filtered by repo, and refuses a malformed repo', async () => {
    expect((await s.api('GET', '/agent')).body).toEqual({ agents: [] });
    const teamId = (await s.api('GET', '/whoami')).body.team.id;
    const definition = {
      agents: [
        {
          name: 'foreman',
          file: 'agents/foreman/agent.md',
          description: 'Leads',
          prompt: 'You lead.',
          execution: { workerHost: 'box-1', runner: 'default' },
        },
        { name: 'reviewer', file: 'agents/reviewer/agent.md', description: null, prompt: 'You review.', execution: {} },
      ],
      factory: { repositories: [{ owner: 'acme', name: 'api' }] },
      runners: [
        { name: 'default', description: null, setupCommands: ['npm ci'], platform: { dockerImage: 'node:24' } },
        { name: 'big', description: 'For builds', setupCommands: [], platform: { dockerImage: null } },
      ],
    };
    await s.server.ctx.db.query(
      `INSERT INTO factories (id, team_id, name, source, state, definition) VALUES ('fac_a', $1, 'main', $2, 'applied', $3)`,
      [teamId, JSON.stringify({ type: 'git', url: 'https://github.com/acme/factory.git' }), JSON.stringify(definition)],
    );
    await s.api('POST', '/agent/runs', { prompt: 'x', config: { name: 'reviewer' } });
    const res = await s.api('GET', '/agent?sort_by=last_run');
    expect(res.status).toBe(200);
    expect(res.body.agents.map((a: { name: string }) => a.name)).toEqual(['reviewer', 'foreman']);
    const foreman = res.body.agents[1];
    expect(foreman.variants[0]).toMatchObject({
      id: 'acme/factory:agents/foreman/agent.md',
      description: 'Leads',
      base_prompt: 'You lead.',
      source: { owner: 'acme', name: 'factory', skill_path: 'agents/foreman/agent.md', worker_host: 'box-1' },
      environments: [{ uid: 'fac_a.default', name: 'default' }],
      last_run_timestamp: null,
    });
    expect(foreman.variants[0]).not.toHaveProperty('repos');
    expect(res.body.agents[0].variants[0].last_run_timestamp).not.toBeNull();
    expect((await s.api('GET', '/agent?repo=acme/factory')).body.agents).toHaveLength(2);
    // A repository the factory.yaml declares selects its agents too.
    expect((await s.api('GET', '/agent?repo=acme/api')).body.agents).toHaveLength(2);
    expect((await s.api('GET', '/agent?repo=acme/other')).body.agents).toHaveLength(0);
    // A factory from a local path is keyed by its name, not by the path's folders.
    await s.server.ctx.db.query(
      `INSERT INTO factories (id, team_id, name, source, state, definition) VALUES ('fac_b', $1, 'local', $2, 'applied', $3)`,
      [
        teamId,
        JSON.stringify({ type: 'git', url: 'file:///tmp/demo-factory' }),
        JSON.stringify({ agents: [{ name: 'solo', file: 'agents/solo/agent.md', prompt: 'x', execution: {} }] }),
      ],
    );
    const solo = (await s.api('GET', '/agent?repo=factory/local')).body.agents;
    expect(solo.map((a: { variants: { id: string }[] }) => a.variants[0]!.id)).toEqual([
      'factory/local:agents/solo/agent.md',
    ]);
    expect((await s.api('GET', '/agent?repo=tmp/demo-factory')).body.agents).toHaveLength(0);

    // The factory's runners are its environments; the newest run on each says when it last ran.
    const envs = await s.api('GET', '/agent/environments?sort_by=name');
    expect(envs.status).toBe(200);
    expect(envs.body.environments).toEqual([
      {
        uid: 'fac_a.big',
        config: {
          name: 'big',
          description: 'For builds',
          github_repos: [{ owner: 'acme', repo: 'api' }],
          setup_commands: [],
        },
        last_updated: expect.any(String),
        setup_failed: false,
        scope: { type: 'Team', uid: teamId },
        factory_uid: 'fac_a',
      },
      expect.objectContaining({
        uid: 'fac_a.default',
        config: {
          name: 'default',
          description: 'a runner of factory main',
          docker_image: 'node:24',
          github_repos: [{ owner: 'acme', repo: 'api' }],
          setup_commands: ['npm ci'],
        },
      }),
    ]);
    const onDefault = await s.api('POST', '/agent/runs', { prompt: 'y', config: { name: 'foreman' } });
    await s.server.ctx.db.query(
      `UPDATE runs SET factory_id = 'fac_a', state = 'FAILED', status_message = '{"message":"no image","error_code":"environment_setup_failed"}' WHERE id = $1`,
      [onDefault.body.run_id],
    );
    const after = (await s.api('GET', '/agent/environments')).body.environments;
    const def = after.find((e: { uid: string }) => e.uid === 'fac_a.default');
    expect(def).toMatchObject({
      setup_failed: true,
      last_task_created: { id: onDefault.body.run_id, title: 'y', state: 'FAILED', started_at: null },
    });
    const bad = await s.api('GET', '/agent?repo=not-a-repo');
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/repo/);
  });

  it('answers the redirect checks without an API key, always with {}', async () => {
    for (const path of [
      '/agent/sessions/4b1f0a6e-0000-4000-8000-000000000000/redirect',
      '/agent/conversations/conv-1/redirect',
    ]) {
      const anonymous = await request(`${s.apiUrl}${path}`);
      expect(anonymous.status).toBe(200);
      expect(anonymous.body).toEqual({});
      expect(anonymous.headers.get('content-type')).toMatch(/application\/json/);
      expect((await s.api('GET', path)).body).toEqual({});
    }
  });

  it('lists handoff attachments with download URLs that work without a key, expire and cannot be forged', async () => {
    const data = Buffer.from('hello attachment');
    const created = await s.api('POST', '/agent/runs', {
      prompt: 'with files',
      attachments: [
        { file_name: 'notes.txt', mime_type: 'text/plain', data: data.toString('base64') },
        { file_name: 'ünïcode "name".png', mime_type: 'image/png', data: Buffer.from([1, 2, 3]).toString('base64') },
      ],
    });
    expect(created.status, created.text).toBe(200);
    const listed = await s.api('GET', `/agent/runs/${created.body.run_id}/handoff/attachments`);
    expect(listed.status).toBe(200);
    const [notes, image] = listed.body.attachments;
    expect(notes).toMatchObject({
      attachment_id: 'notes.txt',
      filename: 'notes.txt',
      mime_type: 'text/plain',
      size_bytes: data.length,
    });
    expect(notes.download_url.startsWith(`${s.apiUrl}/agent/attachments/`)).toBe(true);
    const download = await fetch(notes.download_url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toMatch(/text\/plain/);
    expect(download.headers.get('content-disposition')).toBe(
      `attachment; filename="notes.txt"; filename*=UTF-8''notes.txt`,
    );
    expect(Buffer.from(await download.arrayBuffer())).toEqual(data);
    const png = await fetch(image.download_url);
    expect(Buffer.from(await png.arrayBuffer())).toEqual(Buffer.from([1, 2, 3]));
    expect(png.headers.get('content-disposition')).toContain(
      `filename*=UTF-8''${encodeURIComponent('ünïcode "name".png')}`,
    );
    const token = notes.download_url.split('/').pop() as string;
    const forged = `${token.slice(0, -4)}${token.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect((await request(`${s.apiUrl}/agent/attachments/${forged}`)).status).toBe(404);
    const { sealDownloadToken } = await import('../../src/runs/attachments.ts');
    const expired = sealDownloadToken(s.server.ctx.cipher, {
      teamId: (await s.api('GET', '/whoami')).body.team.id,
      runId: created.body.run_id,
      fileName: 'notes.txt',
      expiresAt: Date.now() - 1,
    });
    const late = await request(`${s.apiUrl}/agent/attachments/${expired}`);
    expect(late.status).toBe(404);
    expect(late.body.detail).toMatch(/expired/);
    // a transcript's link names the same team and run, but is no attachment's
    const { sealTranscriptToken } = await import('../../src/runs/transcript.ts');
    const transcript = sealTranscriptToken(
      s.server.ctx.cipher,
      (await s.api('GET', '/whoami')).body.team.id,
      created.body.run_id,
      Date.now() + 60_000,
    );
    const crossed = await request(`${s.apiUrl}/agent/attachments/${transcript}`);
    expect(crossed.status).toBe(404);
    expect(crossed.body.detail).toMatch(/invalid/);
    const none = await s.api('POST', '/agent/runs', { prompt: 'no files' });
    expect((await s.api('GET', `/agent/runs/${none.body.run_id}/handoff/attachments`)).body).toEqual({
      attachments: [],
    });
    expect((await s.api('GET', '/agent/runs/run_nope/handoff/attachments')).status).toBe(404);
  });

  it('GET /agent/artifacts/{uid} answers an artifact of a run of the team, 404 otherwise', async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'makes a plan' });
    const artifacts = [
      {
        artifact_type: 'PLAN',
        created_at: '2026-02-01T10:00:00.000Z',
        data: { artifact_uid: 'art_plan', document_uid: 'doc1', content: '# Plan', content_type: 'text/markdown' },
      },
      {
        artifact_type: 'PULL_REQUEST',
        created_at: '2026-02-01T10:00:00.000Z',
        data: { artifact_uid: 'art_pr', url: 'https://x/pr/1', branch: 'b' },
      },
    ];
    await s.server.ctx.db.query('UPDATE runs SET artifacts = $2 WHERE id = $1', [
      created.body.run_id,
      JSON.stringify(artifacts),
    ]);
    const plan = await s.api('GET', '/agent/artifacts/art_plan');
    expect(plan.status).toBe(200);
    expect(plan.body).toEqual({
      artifact_uid: 'art_plan',
      artifact_type: 'PLAN',
      created_at: '2026-02-01T10:00:00.000Z',
      run_id: created.body.run_id,
      // A plan's notebook is the run that keeps it.
      data: { ...artifacts[0]!.data, notebook_uid: created.body.run_id },
    });
    expect((await s.api('GET', '/agent/artifacts/art_pr')).status).toBe(404);
    expect((await s.api('GET', '/agent/artifacts/art_none')).status).toBe(404);
    const run = (await s.api('GET', `/agent/runs/${created.body.run_id}`)).body;
    expect(run.artifacts).toEqual(artifacts);
  });
});
