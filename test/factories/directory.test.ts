import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { baseFiles, webhookYaml } from './fixtures.ts';
import { whenFactoryTold } from './support.ts';

async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
}

describe.each(ENGINES)('directory source on %s', (engine) => {
  let server: TestServer;
  let root: string;
  let dir: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'agentyard-dir-'));
    dir = path.join(root, 'my-factory');
    await writeTree(dir, { ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('dev-token') });
    // `agentyard serve --factory ./my-factory`
    server = await startTestServer(engine, { config: { factory: dir } });
    await server.api('PUT', '/secrets/dev-token', { value: 'dev' });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('creates a directory factory named after the directory in the default team at start', async () => {
    const list = (await server.api('GET', '/factories')).body.factories;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ name: 'my-factory', source: { type: 'directory', path: dir }, read_only: true });
    const team = (await server.api('GET', '/whoami')).body.team;
    expect(list[0].team_id).toBe(team.id);
  });

  it('applies an edited file within two seconds of the save', async () => {
    const id = (await server.api('GET', '/factories')).body.factories[0].id as string;
    // The secret was created after start: the first revision is refused; a sync retries it.
    await server.api('POST', `/factories/${id}/sync`);
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks.length === 1,
      'the webhook of the synced revision',
      10_000,
    );

    await writeFile(path.join(dir, 'webhooks/alerts.yaml'), webhookYaml('dev-token', { enabled: false }));
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks[0]?.enabled === false,
      'the disabled webhook (the watcher)',
      2_000,
    );

    await writeFile(path.join(dir, 'webhooks/second.yaml'), webhookYaml('dev-token'));
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks.length === 2,
      'the second webhook (the watcher)',
      2_000,
    );
    const history = (await server.api('GET', `/factories/${id}/applies`)).body.applies;
    expect(history[0]).toMatchObject({ result: 'applied', trigger: 'watch' });
    expect(history[0].revision).toMatch(/^directory@sha256:[0-9a-f]{64}$/);

    // A broken save changes nothing live; the status says why.
    await writeFile(path.join(dir, 'webhooks/second.yaml'), 'authMode: nope\nsecretName: dev-token\n');
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${id}`)).body.status.state === 'failed',
      'the broken save refused',
    );
    const status = (await server.api('GET', `/factories/${id}`)).body.status;
    expect(status.errors).toContainEqual(expect.objectContaining({ file: 'webhooks/second.yaml', line: 1 }));
    expect((await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks).toHaveLength(2);
  });

  it('lets only instance admins create directory factories', async () => {
    const team = await server.api('POST', '/teams', { name: 'tenants' });
    const res = await server.api(
      'POST',
      '/factories',
      { name: 'sneaky', source: { type: 'directory', path: '/etc' } },
      team.body.admin_key.key,
    );
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('not_authorized');
  });
});
