/**
 * The files of a revision refused for its definition's errors are kept (the latest refusal per factory), so an
 * error opens the file that has it; the applied revision's files are served by the same route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { baseFiles, webhookYaml } from './fixtures.ts';
import { createGitFactory } from './support.ts';

describe.each(ENGINES)('revision files on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
    expect(
      (await server.api('PUT', '/secrets/alerts-token', { value: 'a-long-enough-token-value' })).status,
    ).toBeLessThan(300);
  });
  afterAll(async () => server?.close());

  const filesOf = (id: string, revision: string) =>
    server.api('GET', `/factories/${id}/revisions/${encodeURIComponent(revision)}/files`);

  it("serves a refused revision's own files, the applied revision's, and the latest refusal only", async () => {
    const f = await createGitFactory(server, { ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    const good = await f.sync();
    expect(good.revision).toEqual(expect.any(String));

    const badFile = 'authMode: token\nsecretName: alerts-token\nenabeld: false\n';
    const bad = await f.commit({ 'webhooks/alerts.yaml': badFile, 'webhooks/extra.yaml': 'nonsense: [' }, 'typo');
    const refused = await f.sync();
    expect(refused).toMatchObject({ result: 'failed', revision: bad, reason: 'ValidationFailed' });
    const error = refused.errors.find((e: { file: string }) => e.file === 'webhooks/alerts.yaml');
    expect(error.line).toBe(3);

    const kept = await filesOf(f.id, bad);
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body).toMatchObject({ revision: bad, applied: false });
    const keptFile = kept.body.files.find((x: { path: string }) => x.path === 'webhooks/alerts.yaml');
    // The line the error names exists in the refused file, not in the applied one.
    expect(keptFile.content).toBe(badFile);
    expect(keptFile.content.split('\n')[error.line - 1]).toBe('enabeld: false');
    expect(kept.body.files.map((x: { path: string }) => x.path)).toContain('webhooks/extra.yaml');

    const applied = await filesOf(f.id, good.revision);
    expect(applied.status).toBe(200);
    expect(applied.body.applied).toBe(true);
    expect(applied.body.files).toEqual((await server.api('GET', `/factories/${f.id}/definition`)).body.files);

    // A second refusal replaces the first: one refused revision kept per factory.
    const worse = await f.commit({ 'webhooks/alerts.yaml': 'authMode: nope\n' }, 'worse');
    expect((await f.sync()).result).toBe('failed');
    expect((await filesOf(f.id, worse)).status).toBe(200);
    const gone = await filesOf(f.id, bad);
    expect(gone.status).toBe(404);
    expect(gone.body.detail).toContain(bad);

    // Another team's factory is not found.
    expect((await filesOf('fac_nope', worse)).status).toBe(404);
  });
});
