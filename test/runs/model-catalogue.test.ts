import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { knownModels, unknownModel } from '../../src/runs/models.ts';
import { ENGINES } from '../support/db.ts';
import { baseFiles, factoryYaml } from '../support/factory-tree.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { whenFactoryTold } from '../factories/support.ts';

/** factory.yaml whose agentDefaults name `model` (on line 7). */
const withModel = (model: string): string => factoryYaml().replace('model: auto', `model: ${model}`);

describe('the model catalogue', () => {
  it('holds the configured models first, then the built-in ones; suggests the nearest id', () => {
    const known = knownModels({ agentModels: 'house-model', modelCatalogue: 'open' });
    expect(known.default_model_id).toBe('house-model');
    expect(known.models[0]!.id).toBe('house-model');
    for (const id of ['auto', 'auto-genius', 'opus', 'gpt-5.3-codex', 'gemini-2.5-pro', 'claude-sonnet-4-5'])
      expect(known.ids.has(id), id).toBe(true);
    expect(known.closed).toBe(false);
    expect(unknownModel(known, 'config.model_id', 'auto')).toBeUndefined();
    expect(unknownModel(known, 'config.model_id', 'claude-sonet-4-5')).toMatch(/did you mean "claude-sonnet-4-5"/);
    expect(unknownModel(known, 'config.model_id', 'no-such-model-xyz')).not.toMatch(/did you mean/);
  });

  it('answers a repeated unknown id as the first time, for each field, and keeps a bounded memo', () => {
    const known = knownModels({ agentModels: undefined, modelCatalogue: 'open' });
    const first = unknownModel(known, 'config.model_id', 'claude-sonet-4-5');
    expect(unknownModel(known, 'config.model_id', 'claude-sonet-4-5')).toBe(first);
    expect(unknownModel(known, 'config.harness.model_id', 'claude-sonet-4-5')).toMatch(/^config\.harness\.model_id /);
    for (let i = 0; i < 5_000; i++) unknownModel(known, 'config.model_id', `random-${i}`);
    expect(known.verdicts.size).toBeLessThanOrEqual(1024);
    expect(unknownModel(known, 'config.model_id', 'claude-sonet-4-5')).toBe(first);
  });

  it('AGENTYARD_MODEL_CATALOGUE is open (default) or closed; anything else stops the start', () => {
    expect(loadConfig({}, {}).modelCatalogue).toBe('open');
    expect(loadConfig({ AGENTYARD_MODEL_CATALOGUE: 'closed' }, {}).modelCatalogue).toBe('closed');
    expect(() => loadConfig({ AGENTYARD_MODEL_CATALOGUE: 'shut' }, {})).toThrow(/AGENTYARD_MODEL_CATALOGUE/);
  });
});

describe.each(ENGINES)('model ids checked at run creation and at apply on %s', (engine) => {
  const servers: TestServer[] = [];
  let root: string;
  let open: TestServer;
  let closed: TestServer;

  const factoryDir = async (name: string, model: string): Promise<string> => {
    const dir = path.join(root, name);
    for (const [file, content] of Object.entries({ ...baseFiles(), 'factory.yaml': withModel(model) })) {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await writeFile(path.join(dir, file), content);
    }
    return dir;
  };
  /** The newest apply whose result is `result` (the first one at start may still be running). */
  const lastApply = async (s: TestServer, result: string) => {
    const id = (await s.api('GET', '/factories')).body.factories[0].id as string;
    let entry: Record<string, unknown> | undefined;
    // each reconcile recorded is told: asked again then (a sync asked for when none has the result yet)
    await whenFactoryTold(
      s,
      async () => {
        const applies = (await s.api('GET', `/factories/${id}/applies`)).body.applies as Record<string, unknown>[];
        entry = applies.find((a) => a.result === result);
        if (!entry && applies.length > 0) await s.api('POST', `/factories/${id}/sync`);
        return entry?.result === result;
      },
      `an apply with result ${result}`,
      30_000,
    );
    return entry!;
  };

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'agentyard-models-'));
    open = await startTestServer(engine, {
      config: { agentModels: 'house-model', factory: await factoryDir('open-factory', 'auto-genuis') },
    });
    servers.push(open);
    closed = await startTestServer(engine, {
      config: {
        agentModels: 'house-model',
        modelCatalogue: 'closed',
        factory: await factoryDir('closed-factory', 'auto-genuis'),
      },
    });
    servers.push(closed);
  }, 120_000);
  afterAll(async () => {
    for (const s of servers) await s.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('GET /agent/models answers the catalogue in the reference shape', async () => {
    const res = await open.api('GET', '/agent/models');
    expect(res.status).toBe(200);
    expect(res.body.default_model_id).toBe('house-model');
    expect(res.body.models[0]).toEqual({
      id: 'house-model',
      display_name: 'house-model',
      provider: 'UNKNOWN',
      vision_supported: true,
    });
    expect(res.body.models.map((m: { id: string }) => m.id)).toContain('auto-genius');
    expect(res.body).not.toHaveProperty('closed');
  });

  it('an unknown model is created with a warning (body and Warning header); a known one without', async () => {
    const typo = await open.api('POST', '/agent/runs', {
      prompt: 'x',
      config: { model_id: 'claude-sonet-4-5', harness: { type: 'claude', model_id: 'opus' } },
    });
    expect(typo.status, typo.text).toBe(200);
    expect(typo.body.warnings).toEqual([
      {
        code: 'model_unknown',
        field: 'config.model_id',
        message: expect.stringMatching(/config\.model_id "claude-sonet-4-5" .*did you mean "claude-sonnet-4-5"/),
      },
    ]);
    expect(typo.headers.get('warning')).toMatch(/^299 agentyard ".*did you mean \\"claude-sonnet-4-5\\"/);
    expect((await open.api('GET', `/agent/runs/${typo.body.run_id}`)).body.agent_config.model_id).toBe(
      'claude-sonet-4-5',
    );
    const fine = await open.api('POST', '/agent/runs', { prompt: 'x', config: { model_id: 'house-model' } });
    expect(fine.status).toBe(200);
    expect(fine.body).not.toHaveProperty('warnings');
    expect(fine.headers.get('warning')).toBeNull();
  });

  it('a closed catalogue refuses an unknown model with 422 model_unknown and creates nothing', async () => {
    const before = (await closed.api('GET', '/agent/runs')).body.runs.length;
    const refused = await closed.api('POST', '/agent/runs', {
      prompt: 'x',
      config: { harness: { model_id: 'opuss' } },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('model_unknown');
    expect(refused.body.detail).toMatch(/config\.harness\.model_id "opuss".*did you mean "opus"/);
    expect((await closed.api('GET', '/agent/runs')).body.runs.length).toBe(before);
    expect((await closed.api('POST', '/agent/runs', { prompt: 'x', config: { model_id: 'house-model' } })).status).toBe(
      200,
    );
  });

  it('apply: an unknown model is a warning at its file:line with a did-you-mean, and the factory applies', async () => {
    const entry = await lastApply(open, 'applied');
    expect(entry.errors).toEqual([
      expect.objectContaining({
        file: 'factory.yaml',
        line: 7,
        severity: 'warning',
        code: 'FF_INVALID_REFERENCE',
        message: expect.stringMatching(/unknown model `auto-genuis`; did you mean `auto-genius`\?/),
      }),
    ]);
  });

  it('apply with a closed catalogue: the unknown model is an error and the revision is refused', async () => {
    const entry = await lastApply(closed, 'failed');
    expect(entry.errors).toEqual([
      expect.objectContaining({ file: 'factory.yaml', line: 7, severity: 'error', code: 'FF_INVALID_REFERENCE' }),
    ]);
  });

  it('validate (dry run) reports the same warning', async () => {
    const res = await open.api('POST', '/factory-files/validate', {
      files: Object.entries({ ...baseFiles(), 'factory.yaml': withModel('gpt-5.3-codx') }).map(([p, content]) => ({
        path: p,
        content,
      })),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.valid).toBe(true);
    expect(res.body.diagnostics).toEqual([
      expect.objectContaining({
        path: 'factory.yaml',
        line: 7,
        severity: 'warning',
        message: expect.stringMatching(/did you mean `gpt-5.3-codex`/),
      }),
    ]);
  });
});
