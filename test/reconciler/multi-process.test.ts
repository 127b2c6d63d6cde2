import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, createTestDatabase } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { controllerFor } from '../../src/reconciler/index.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { baseFiles, webhookYaml } from './fixtures.ts';

// Two servers on one PostgreSQL database, each with its own connection pool, data directory and reconcile
// loops: every revision must be applied exactly once, whoever gets there first.
describe.runIf(ENGINES.includes('postgres'))('two controllers on one PostgreSQL database', () => {
  let database: TestDatabase;
  let second: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let remote: GitRemote;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    a = await startTestServer('postgres', { database });
    const db = await openPostgres({ connectionString: database.url! });
    second = { db, engine: 'postgres', url: database.url, close: () => db.close() };
    b = await startTestServer('postgres', { database: second, config: { bootstrapApiKey: a.adminKey } });
    remote = await createGitRemote();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await second?.close();
    await database?.close();
    remote?.close();
  });

  it('applies each revision once', async () => {
    await a.api('PUT', '/secrets/alerts-token', { value: 'tok' });
    await remote.write({ ...baseFiles(), 'webhooks/hook-0.yaml': webhookYaml('alerts-token') });
    await remote.commitAndPush('initial');
    const created = await a.api('POST', '/factories', { name: 'shared', source: { type: 'git', url: remote.bare, poll_interval_seconds: 1 } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const ca = controllerFor(a.server.ctx);
    const cb = controllerFor(b.server.ctx);

    const revisions: string[] = [];
    for (let i = 1; i <= 6; i++) {
      await remote.write({ [`webhooks/hook-${i}.yaml`]: webhookYaml('alerts-token') });
      revisions.push(`main@sha1:${await remote.commitAndPush(`hook ${i}`)}`);
      // Both controllers race for the same revision (the one-second pollers race as well).
      const results = await Promise.all([ca.request(id, 'poll', false), cb.request(id, 'poll', false), ca.request(id, 'poll', false), cb.request(id, 'poll', false)]);
      for (const r of results) expect(['applied', 'skipped']).toContain(r.result);
    }

    const applies = await a.server.ctx.db.query<{ revision: string; result: string }>('SELECT revision, result FROM factory_applies WHERE factory_id = $1', [id]);
    const applied = applies.rows.filter((r) => r.result === 'applied').map((r) => r.revision);
    expect(applied.length).toBe(new Set(applied).size);
    for (const revision of revisions) expect(applied).toContain(revision);
    expect(applies.rows.filter((r) => r.result !== 'applied')).toEqual([]);

    const hooks = await a.server.ctx.db.query<{ name: string }>('SELECT name FROM webhooks WHERE factory_id = $1 AND deleted_at IS NULL ORDER BY name', [id]);
    expect(hooks.rows.map((r) => r.name)).toEqual(['hook-0', 'hook-1', 'hook-2', 'hook-3', 'hook-4', 'hook-5', 'hook-6']);
    const status = (await b.api('GET', `/factories/${id}`)).body.status;
    expect(status).toMatchObject({ state: 'applied', applied_revision: revisions.at(-1), attempted_revision: revisions.at(-1) });
  });
});
