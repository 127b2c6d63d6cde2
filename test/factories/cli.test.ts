import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { automationMd, baseFiles, webhookYaml } from './fixtures.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = path.join(ROOT, 'bin/agentyard.js');

/** Runs the CLI as a separate process (asynchronously: the server under test lives in this process). */
function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

async function tree(files: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-cli-'));
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
  dirs.push(dir);
  return dir;
}
const dirs: string[] = [];

// The CLI talks HTTP to a server; the engine behind it does not matter here.
describe('agentyard plan and apply', () => {
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer('pglite');
    env = { AGENTYARD_URL: server.url, AGENTYARD_API_KEY: server.adminKey };
    await server.api('PUT', '/secrets/alerts-token', { value: 'tok' });
    await server.api('POST', '/factories', { name: 'cli-managed' });
    await server.api('POST', '/factories', {
      name: 'cli-git',
      source: { type: 'git', url: 'https://github.com/acme/factory.git', poll_interval_seconds: 0 },
    });
  });
  afterAll(async () => {
    await server?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('plans, applies, and plans a rename with its warning', async () => {
    const first = await tree({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    const plan = await run(['plan', first, '--factory', 'cli-managed'], env);
    expect(plan.code, plan.stderr).toBe(0);
    // Against the seed commit of the new managed factory (src/factories/seed.ts).
    expect(plan.stdout).toMatch(/^Plan for factory cli-managed \(applied revision: main@sha1:[0-9a-f]{40}\):\n/);
    expect(plan.stdout).toContain('  + webhook alerts (webhooks/alerts.yaml, uid assigned at apply)');
    expect(plan.stdout).toContain('  ~ factory Alert triage (factory.yaml)');
    expect(plan.stdout).toContain('  - agent triage (agents/triage/agent.md)');
    expect(plan.stdout).toMatch(/\n1 to create, 3 to change, 4 to delete\.\n$/);

    const apply = await run(['apply', first, '--factory', 'cli-managed', '-m', 'from the CLI'], env);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toMatch(/^Applied revision: main@sha1:[0-9a-f]{40}\n/);
    const again = await run(['apply', first, '--factory', 'cli-managed'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('(no changes)');

    const id = (await server.api('GET', '/factories?search=cli-managed')).body.factories[0].id;
    const [hook] = (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks;
    const renamed = await tree({
      ...baseFiles(),
      'webhooks/alerts-v2.yaml': webhookYaml('alerts-token'),
      'automations/triage/automation.md': automationMd(hook.uid),
    });
    const renamePlan = await run([
      'plan',
      renamed,
      '--factory',
      'cli-managed',
      '--server',
      server.url,
      '--key',
      server.adminKey,
    ]);
    expect(renamePlan.code, renamePlan.stderr).toBe(0);
    expect(renamePlan.stdout).toContain(`  - webhook alerts (webhooks/alerts.yaml, uid ${hook.uid})`);
    expect(renamePlan.stdout).toContain(
      '  + webhook alerts-v2 (webhooks/alerts-v2.yaml, uid assigned at apply) — renamed from webhooks/alerts.yaml',
    );
    expect(renamePlan.stdout).toMatch(
      /automations\/triage\/automation\.md:6:1: warning trigger_stops_firing: trigger 0 names wh_/,
    );
    expect(renamePlan.stdout).toContain('webhooks/alerts-v2.yaml:1:1: warning webhook_renamed');
  });

  it('exits 1 with file:line diagnostics for a tree that would be refused', async () => {
    const broken = await tree({
      ...baseFiles(),
      'webhooks/alerts.yaml': 'authMode: token\nsecretName: no-such-secret\n',
    });
    const plan = await run(['plan', broken, '--factory', 'cli-managed'], env);
    expect(plan.code).toBe(1);
    expect(plan.stdout).toContain(
      'webhooks/alerts.yaml:2:13: error FF_INVALID_REFERENCE: no managed secret named `no-such-secret`',
    );
    const apply = await run(['apply', broken, '--factory', 'cli-managed'], env);
    expect(apply.code).toBe(1);
    expect(apply.stderr).toContain('nothing was committed');
  });

  it('refuses apply to a repository-backed factory and reports usage and connection problems', async () => {
    const dir = await tree(baseFiles());
    const readOnly = await run(['apply', dir, '--factory', 'cli-git'], env);
    expect(readOnly.code).toBe(1);
    expect(readOnly.stderr).toContain('409 factory_read_only');
    expect(readOnly.stderr).toContain('https://github.com/acme/factory.git');
    expect((await run(['plan', dir], env)).code).toBe(2);
    const unknown = await run(['plan', dir, '--factory', 'nope'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no factory named "nope"');
    const down = await run(['plan', dir, '--factory', 'x'], {
      AGENTYARD_URL: 'http://127.0.0.1:9',
      AGENTYARD_API_KEY: 'k',
    });
    expect(down.code).toBe(2);
    expect(down.stderr).toContain('cannot reach http://127.0.0.1:9/api/v1');
  });
});
