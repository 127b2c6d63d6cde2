import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, createTestDatabase } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { asFileList, baseFiles, webhookYaml } from './fixtures.ts';

// Two servers on one PostgreSQL database, each with its own connection pool, data directory and reconcile
// loops: every revision must be applied exactly once, whoever gets there first.
// Each test validates some thirty trees on the servers' validation workers, which run at nice +10: on a
// saturated 2-core machine (the suite itself) they get a tenth of a core, and a test takes 25 s or more.
const TIMEOUT = { timeout: 120_000 };

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

  it('applies each revision once', TIMEOUT, async () => {
    await a.api('PUT', '/secrets/alerts-token', { value: 'tok' });
    await remote.write({ ...baseFiles(), 'webhooks/hook-0.yaml': webhookYaml('alerts-token') });
    await remote.commitAndPush('initial');
    const created = await a.api('POST', '/factories', {
      name: 'shared',
      source: { type: 'git', url: remote.bare, poll_interval_seconds: 1 },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const ca = a.server.services.controller;
    const cb = b.server.services.controller;

    const revisions: string[] = [];
    for (let i = 1; i <= 6; i++) {
      await remote.write({ [`webhooks/hook-${i}.yaml`]: webhookYaml('alerts-token') });
      revisions.push(`main@sha1:${await remote.commitAndPush(`hook ${i}`)}`);
      // Both controllers race for the same revision (the one-second pollers race as well).
      const results = await Promise.all([
        ca.request(id, 'poll', false),
        cb.request(id, 'poll', false),
        ca.request(id, 'poll', false),
        cb.request(id, 'poll', false),
      ]);
      for (const r of results) expect(['applied', 'skipped']).toContain(r.result);
    }

    const applies = await a.server.ctx.db.query<{ revision: string; result: string }>(
      'SELECT revision, result FROM factory_applies WHERE factory_id = $1',
      [id],
    );
    const applied = applies.rows.filter((r) => r.result === 'applied').map((r) => r.revision);
    expect(applied.length).toBe(new Set(applied).size);
    for (const revision of revisions) expect(applied).toContain(revision);
    expect(applies.rows.filter((r) => r.result !== 'applied')).toEqual([]);

    const hooks = await a.server.ctx.db.query<{ name: string }>(
      'SELECT name FROM webhooks WHERE factory_id = $1 AND deleted_at IS NULL ORDER BY name',
      [id],
    );
    expect(hooks.rows.map((r) => r.name)).toEqual([
      'hook-0',
      'hook-1',
      'hook-2',
      'hook-3',
      'hook-4',
      'hook-5',
      'hook-6',
    ]);
    const status = (await b.api('GET', `/factories/${id}`)).body.status;
    expect(status).toMatchObject({
      state: 'applied',
      applied_revision: revisions.at(-1),
      attempted_revision: revisions.at(-1),
    });
  });
  it(
    'keeps every managed write when the writes go to different processes, and to a process with an empty data directory',
    TIMEOUT,
    async () => {
      const created = await a.api('POST', '/factories', { name: 'managed-shared' });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(
        (await b.api('POST', `/factories/${id}/apply`, { files: asFileList(baseFiles()), message: 'base files' }))
          .status,
      ).toBe(200);
      const servers = [a, b];
      // Twelve webhooks created through both servers at once: each write starts from the head the database
      // records, so none of them commits a tree without the others.
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          servers[i % 2]!.api('POST', `/factories/${id}/webhooks`, { name: `hook-${String(i).padStart(2, '0')}` }),
        ),
      );
      for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(201);
      const names = Array.from({ length: 12 }, (_, i) => `hook-${String(i).padStart(2, '0')}`);
      for (const server of servers) {
        const listed = (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks
          .map((w: { name: string }) => w.name)
          .sort();
        expect(listed).toEqual(names);
        const files = (await server.api('GET', `/factories/${id}/definition`)).body.files.map(
          (f: { path: string }) => f.path,
        );
        for (const name of names) expect(files).toContain(`webhooks/${name}.yaml`);
      }
      const commits = await a.server.ctx.db.query<{ seq: number }>(
        'SELECT seq FROM managed_commits WHERE factory_id = $1 ORDER BY seq',
        [id],
      );
      // The seed, the base files and twelve webhooks.
      expect(commits.rows.map((r) => r.seq)).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
      const status = (await a.api('GET', `/factories/${id}`)).body.status;
      const head = await a.server.ctx.db.query<{ sha: string }>(
        'SELECT sha FROM managed_commits WHERE factory_id = $1 AND seq = 14',
        [id],
      );
      expect(status.applied_revision).toBe(`main@sha1:${head.rows[0]!.sha}`);

      // A third process with a data directory of its own (a pod that lost its volume) deletes one of them.
      const third = await openPostgres({ connectionString: database.url! });
      const c = await startTestServer('postgres', {
        database: { db: third, engine: 'postgres', url: database.url, close: () => third.close() },
        config: { bootstrapApiKey: a.adminKey },
      });
      try {
        const victim = (await c.api('GET', `/factories/${id}/webhooks`)).body.webhooks.find(
          (w: { name: string }) => w.name === 'hook-05',
        );
        expect((await c.api('DELETE', `/webhooks/${victim.uid}`)).status).toBe(204);
        const left = (await a.api('GET', `/factories/${id}/webhooks`)).body.webhooks
          .map((w: { name: string }) => w.name)
          .sort();
        expect(left).toEqual(names.filter((n) => n !== 'hook-05'));
        // the first server's next write starts from the deletion, and both git mirrors hold one history
        expect((await a.api('POST', `/factories/${id}/webhooks`, { name: 'hook-12' })).status).toBe(201);
        const final = (await c.api('GET', `/factories/${id}/webhooks`)).body.webhooks
          .map((w: { name: string }) => w.name)
          .sort();
        expect(final).toEqual([...names.filter((n) => n !== 'hook-05'), 'hook-12']);
        const { simpleGit } = await import('simple-git');
        const logOf = async (dir: string) =>
          (await simpleGit(dir).raw(['log', '--format=%H %s', 'main'])).trim().split('\n');
        const logA = await logOf(`${a.dataDir}/managed/${id}.git`);
        expect(logA[0]).toMatch(/ Create webhook hook-12$/);
        expect(logA.slice(1)).toEqual(await logOf(`${c.dataDir}/managed/${id}.git`));
      } finally {
        await c.close();
        await third.close();
      }
    },
  );
});
