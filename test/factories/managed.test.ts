import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import type { Services } from '../../src/composition.ts';
import type { Reconciler } from '../../src/factories/apply/reconciler.ts';
import { getFactory } from '../../src/factories/apply/sql.ts';
import { ManagedRepository } from '../../src/sources/managed.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { SEED_COMMIT_MESSAGE } from '../../src/factories/seed.ts';
import { asFileList, automationMd, baseFiles, webhookYaml } from './fixtures.ts';

/** A change to a managed factory through the server's reconciler, as the management APIs make one. */
function applyManagedChange(
  services: Services,
  ...args: Parameters<Reconciler['applyManagedChange']>
): ReturnType<Reconciler['applyManagedChange']> {
  return services.controller.reconciler.applyManagedChange(...args);
}

describe.each(ENGINES)('managed factories on %s', (engine) => {
  let server: TestServer;
  let id: string;
  let seeded: string | null;
  const author = { author: { name: 'Ada', email: 'ada@example.com' }, message: 'test change' };

  const head = async () => {
    const factory = (await server.api('GET', `/factories/${id}`)).body;
    return factory.status.applied_revision as string | null;
  };

  beforeAll(async () => {
    server = await startTestServer(engine);
    await server.api('PUT', '/secrets/alerts-token', { value: 'tok' });
    const created = await server.api('POST', '/factories', { name: 'managed-one', source: { type: 'managed' } });
    expect(created.status).toBe(201);
    // A new managed factory starts with the seed commit (src/factories/seed.ts) applied.
    expect(created.body).toMatchObject({ read_only: false, source: { type: 'managed' }, status: { state: 'applied' } });
    id = created.body.id;
    seeded = await head();
  });
  afterAll(async () => server?.close());

  it('refuses an invalid tree with diagnostics and commits nothing', async () => {
    const files = { ...baseFiles(), 'webhooks/alerts.yaml': 'authMode: token\nsecretName: missing-secret\n' };
    const res = await server.api('POST', `/factories/${id}/apply`, { files: asFileList(files) });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('definition_invalid');
    expect(res.body.diagnostics).toContainEqual(
      expect.objectContaining({ file: 'webhooks/alerts.yaml', line: 2, code: 'FF_INVALID_REFERENCE' }),
    );
    expect(res.body.detail).toContain('webhooks/alerts.yaml:2');
    expect(await head()).toBe(seeded);
    expect((await server.api('GET', `/factories/${id}/applies`)).body.applies).toHaveLength(1);
    expect(
      await new ManagedRepository(`${server.dataDir}/managed/${id}.git`, {
        db: server.server.ctx.db,
        factoryId: id,
      }).head(),
    ).toBe(seeded?.replace('main@sha1:', ''));
  });

  it('validates, commits and applies a valid tree in one step', async () => {
    const res = await server.api('POST', `/factories/${id}/apply`, {
      files: asFileList({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') }),
      message: 'first version',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ result: 'applied', status: { state: 'applied' } });
    expect(res.body.revision).toMatch(/^main@sha1:[0-9a-f]{40}$/);
    const [entry] = (await server.api('GET', `/factories/${id}/applies`)).body.applies;
    expect(entry).toMatchObject({
      result: 'applied',
      trigger: 'managed',
      commit: { message: 'first version', author: expect.stringContaining('<') },
    });
    const definition = (await server.api('GET', `/factories/${id}/definition`)).body;
    expect(definition.revision).toBe(res.body.revision);
    expect(definition.files.map((f: { path: string }) => f.path)).toEqual([
      'agents/foreman/agent.md',
      'factory.yaml',
      'runners/default.yaml',
      'webhooks/alerts.yaml',
    ]);
    expect(definition.definition.foreman).toBe('foreman');
  });

  it('applies changes made through applyManagedChange, and refuses invalid ones without a commit', async () => {
    const before = await head();
    const [hook] = (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks;
    const outcome = await applyManagedChange(
      server.server.ctx,
      id,
      (files) => [...files, { path: 'automations/triage/automation.md', content: automationMd(hook.uid) }],
      author,
    );
    expect(outcome.result).toBe('applied');
    expect(outcome.changes).toContainEqual(
      expect.objectContaining({ kind: 'automation', name: 'triage', action: 'created' }),
    );
    const afterAdd = await head();
    expect(afterAdd).not.toBe(before);

    const refused = await applyManagedChange(
      server.server.ctx,
      id,
      (files) => files.filter((f) => f.path !== 'factory.yaml'),
      author,
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'definition_invalid', status: 422 });
    expect((refused as AppError).extensions.diagnostics).toContainEqual(
      expect.objectContaining({ code: 'FF_MISSING_FACTORY' }),
    );
    expect(await head()).toBe(afterAdd);

    // The same files again commit nothing.
    const same = await applyManagedChange(server.server.ctx, id, (files) => files, author);
    expect(same.result).toBe('unchanged');
    expect(await head()).toBe(afterAdd);
  });

  it('keeps the history of a managed factory as a git log', async () => {
    const repoDir = `${server.dataDir}/managed/${id}.git`;
    const { simpleGit } = await import('simple-git');
    const log = await simpleGit(repoDir).log(['main']);
    expect(log.all.map((c) => c.message)).toEqual(['test change', 'first version', SEED_COMMIT_MESSAGE]);
  });

  it('never applies a managed commit that a newer one replaced', async () => {
    const ctx = server.server.ctx;
    const reconciler = ctx.controller.reconciler;
    const older = (await (reconciler.sourceFor((await getFactory(ctx.db, id))!) as ManagedRepository).fetch())!;
    const newer = await applyManagedChange(
      ctx,
      id,
      (files) => [...files, { path: 'skills/notes.md', content: '# Notes\n' }],
      author,
    );
    expect(newer.result).toBe('applied');
    // Another process still holding the older commit tries to apply it: skipped, the factory stays at the newer one.
    const stale = await reconciler.reconcileSnapshot((await getFactory(ctx.db, id))!, older, {
      trigger: 'managed',
      explicit: true,
    });
    expect(stale).toMatchObject({ result: 'skipped', revision: older.revision });
    expect(stale.message).toContain('no longer the head');
    expect(await head()).toBe(newer.revision);
    const undo = await applyManagedChange(
      ctx,
      id,
      (files) => files.filter((f) => f.path !== 'skills/notes.md'),
      author,
    );
    expect(undo.result).toBe('applied');
  });

  it('applyManagedChange refuses a repository-backed factory', async () => {
    const git = await server.api('POST', '/factories', {
      name: 'from-git',
      source: { type: 'git', url: 'https://example.invalid/a/b.git', poll_interval_seconds: 0 },
    });
    await expect(applyManagedChange(server.server.ctx, git.body.id, (f) => f, author)).rejects.toMatchObject({
      code: 'factory_read_only',
      status: 409,
    });
  });
});
