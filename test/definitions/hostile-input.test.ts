/**
 * Hostile factory files (issue 24): deep nesting is refused by the YAML nesting limit before the parser runs,
 * parsing and validation run on worker threads with a time and a heap budget, and the validate endpoint's
 * caps answer 413 with an `FF_LIMIT_EXCEEDED` diagnostic naming the file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_YAML_DEPTH, excessiveDepth } from '../../src/definitions/depth.ts';
import { DefinitionPool } from '../../src/definitions/pool.ts';
import { parseMarkdownSource, parseYamlSource } from '../../src/definitions/yaml.ts';
import { post, seedWebhook } from '../ingress/support.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { tree } from './support.ts';

const NESTED = `name: x\nrepositories: ${'['.repeat(120_000)}\n`;

describe('the YAML nesting limit', () => {
  it('refuses 120,000 nested `[` at the line and column where the limit is passed', () => {
    const parsed = parseYamlSource('factory.yaml', NESTED);
    expect(parsed.value).toBeUndefined();
    expect(parsed.diagnostics).toEqual([
      expect.objectContaining({ file: 'factory.yaml', line: 2, code: 'FF_LIMIT_EXCEEDED' }),
    ]);
    expect(parsed.diagnostics[0]!.message).toContain(`deeper than ${MAX_YAML_DEPTH} levels`);
  });

  it('counts compact block nesting (`- - - …`), flow maps, and frontmatter lines of a Markdown file', () => {
    expect(excessiveDepth(`a: ${'- '.repeat(50_000)}x\n`)).toMatchObject({ line: 1 });
    expect(excessiveDepth(`a: 1\nb: ${'{c: '.repeat(500)}\n`)).toMatchObject({ line: 2 });
    const md = parseMarkdownSource('agents/a/agent.md', `---\nagentType: FOREMAN\nx: ${'['.repeat(300)}\n---\nBody\n`);
    expect(md.diagnostics[0]).toMatchObject({ line: 3, code: 'FF_LIMIT_EXCEEDED' });
  });

  it('leaves ordinary files alone: brackets in strings, block scalars and comments do not count', () => {
    const text = `a:\n  - b: "${'['.repeat(300)}"\n  - |\n    ${'['.repeat(300)}\n# ${'{'.repeat(300)}\nc: [1, [2, {d: 3}]]\n`;
    expect(excessiveDepth(text)).toBeUndefined();
    expect(parseYamlSource('x.yaml', text).diagnostics).toEqual([]);
    let deep = '';
    for (let i = 0; i < 60; i++) deep += `${' '.repeat(i)}k${i}:\n`;
    expect(excessiveDepth(`${deep}${' '.repeat(60)}v: 1\n`)).toBeUndefined();
  });
});

describe('the definition pool', () => {
  const pools: DefinitionPool[] = [];
  const pool = (options: ConstructorParameters<typeof DefinitionPool>[0]) => {
    const p = new DefinitionPool(options);
    pools.push(p);
    return p;
  };
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  it('validates on a worker thread, asking this thread the secret questions', async () => {
    const asked: string[] = [];
    const result = await pool({ timeoutMs: 30_000, memoryMb: 256, threads: 1 }).validate(
      tree({ 'webhooks/alerts.yaml': 'authMode: token\nsecretName: hook-secret\n' }),
      {
        secretExists: async (name) => {
          asked.push(name);
          return name === 'hook-secret';
        },
        secretIsUrlSafe: () => true,
        knownWebhookUids: new Set(),
        teamRunners: new Set(),
      },
    );
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(result.valid).toBe(true);
    expect(asked).toEqual(['hook-secret']);
    expect(result.definition?.webhooks.map((w) => w.name)).toEqual(['alerts']);
  });

  it('ends a job that runs past its budget with FF_LIMIT_EXCEEDED, and keeps working after', async () => {
    const p = pool({ timeoutMs: 1_000, memoryMb: 512, threads: 1 });
    // The job waits for an answer that never comes: only the budget can end it.
    const stuck = await p.validate(tree({ 'webhooks/alerts.yaml': 'authMode: token\nsecretName: hook-secret\n' }), {
      secretExists: () => new Promise<boolean>(() => {}),
    });
    expect(stuck.valid).toBe(false);
    expect(stuck.diagnostics).toEqual([expect.objectContaining({ file: 'factory.yaml', code: 'FF_LIMIT_EXCEEDED' })]);
    expect(stuck.diagnostics[0]!.message).toMatch(/did not finish within 1 s/);
    // 40 files of 140 KB of flow mappings, a tenth of a second of parsing each at least: a busy worker.
    const big = `a: [${Array.from({ length: 12_000 }, (_, i) => `{k${i}: v}`).join(', ')}]\n`;
    const files = tree(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`runners/r${i}.yaml`, big])));
    const busy = await p.validate(files);
    expect(busy.diagnostics).toEqual([expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED' })]);
    expect(busy.diagnostics[0]!.message).toMatch(/did not finish within 1 s/);
    // A new worker takes the next job; its start is not counted against the job.
    expect((await p.validate(tree())).valid).toBe(true);
  }, 90_000);

  it("counts a job's time from when its worker takes it, not the worker's start or the wait for a worker", async () => {
    const timeoutMs = 3_000;
    const p = pool({ timeoutMs, memoryMb: 256, threads: 1 });
    // Each job runs 0.55 of the budget (its secret question is answered that late), one after the other on one new
    // worker: the second ends 1.1 budgets after it was submitted, plus the worker's start.
    const held = { secretExists: () => new Promise<boolean>((resolve) => setTimeout(resolve, 0.55 * timeoutMs, true)) };
    const files = tree({ 'webhooks/alerts.yaml': 'authMode: token\nsecretName: hook-secret\n' });
    const submitted = Date.now();
    const results = await Promise.all([p.validate(files, held), p.validate(files, held)]);
    expect(Date.now() - submitted).toBeGreaterThan(1.1 * timeoutMs);
    expect(results.map((r) => r.diagnostics.filter((d) => d.severity === 'error'))).toEqual([[], []]);
    expect(results.map((r) => r.valid)).toEqual([true, true]);
  }, 90_000);

  it('answers FF_LIMIT_EXCEEDED when a job needs more heap than its budget', async () => {
    // Four files of 180 KiB of flow mappings, within the work budgets: their nodes need far more than 24 MiB.
    const big = `a: [${Array.from({ length: 4_500 }, (_, i) => `{k${i}: ${'v'.repeat(30)}}`).join(', ')}]\n`;
    const files = tree(Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`runners/r${i}.yaml`, big])));
    const result = await pool({ timeoutMs: 60_000, memoryMb: 24, threads: 1 }).validate(files);
    expect(result.valid).toBe(false);
    expect(result.diagnostics).toEqual([expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED' })]);
    expect(result.diagnostics[0]!.message).toMatch(/more than 24 MiB of memory/);
  }, 90_000);
});

describe.each(ENGINES)('hostile validate requests on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine, { config: { validateRateLimit: 0 } });
  });
  afterAll(async () => {
    await s?.close();
  });

  const validate = (files: unknown) =>
    request(`${s.apiUrl}/factory-files/validate`, { method: 'POST', body: { files } });

  it('answers 120,000 nested `[` with a diagnostic while a webhook delivery sent alongside answers 202', async () => {
    const hook = await seedWebhook(s);
    const [validated, delivered] = await Promise.all([
      validate([{ path: 'factory.yaml', content: NESTED }]),
      post(hook.url, '{"hello":"world"}', {
        'content-type': 'application/json',
        authorization: `Bearer ${hook.secret}`,
      }),
    ]);
    expect(validated.status).toBe(200);
    expect(validated.body.valid).toBe(false);
    expect(validated.body.diagnostics).toContainEqual(
      expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED', path: 'factory.yaml', line: 2 }),
    );
    expect(delivered.status).toBe(202);
  });

  it('refuses each of 8 nested files in a 1.9 MB request, and a ninth file past 2 MiB with 413', async () => {
    const content = `a: ${'['.repeat(240 * 1024)}\n`;
    const files = Array.from({ length: 8 }, (_, i) => ({ path: `runners/r${i}.yaml`, content }));
    expect(JSON.stringify({ files }).length).toBeGreaterThan(1_900_000);
    const answered = await validate([{ path: 'factory.yaml', content: 'name: x\n' }, ...files]);
    expect(answered.status).toBe(200);
    const refused = answered.body.diagnostics.filter((d: { code: string }) => d.code === 'FF_LIMIT_EXCEEDED');
    expect(refused.map((d: { path: string }) => d.path)).toEqual(files.map((f) => f.path));
    const over = await validate([...files, { path: 'runners/last.yaml', content }]);
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ code: 'payload_too_large' });
    expect(over.body.diagnostics).toEqual([
      expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED', path: 'runners/last.yaml' }),
    ]);
  });
});
