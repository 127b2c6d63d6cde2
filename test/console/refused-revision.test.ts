/**
 * A refused revision's problem opens that revision's file at its line (the API keeps the refused files), not the
 * applied file where the line may not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { baseFiles, webhookYaml } from '../factories/fixtures.ts';
import { RUNNER } from '../support/factory-tree.ts';
import { createGitFactory } from '../factories/support.ts';
import { get, signIn } from './support.ts';
import type { Session } from './support.ts';

describe.each(ENGINES)("a refused revision's file in the console on %s", (engine) => {
  let server: TestServer;
  let admin: Session;
  beforeAll(async () => {
    server = await startTestServer(engine);
    admin = await signIn(server, server.adminKey);
    await server.api('PUT', '/secrets/alerts-token', { value: 'a-long-enough-token-value' });
  });
  afterAll(async () => server?.close());

  it('opens the refused file with the failing line marked, and the applied one once fixed', async () => {
    const f = await createGitFactory(server, { ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    await f.sync();
    // The applied file has fewer lines than the refused one: line 4 exists only in the refused revision.
    await f.commit(
      { 'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\n# typo below\nenabeld: false\n' },
      'typo',
    );
    const refused = await f.sync();
    expect(refused.result).toBe('failed');
    const error = refused.errors.find((e: { file: string }) => e.file === 'webhooks/alerts.yaml');
    expect(error.line).toBe(4);

    const factoryPage = await get(server, `/console/factories/${f.id}`, admin.cookie);
    const href = `/console/factories/${f.id}/files/webhooks/alerts.yaml#L4`;
    expect(factoryPage.text).toContain(`href="${href}"`);
    const file = await get(server, href.replace('#L4', ''), admin.cookie);
    expect(file.status).toBe(200);
    expect(file.text).toContain('Shown as in the refused revision');
    expect(file.text).toMatch(
      /<li id="L4" class="flagged">.*<code>enabeld: false<\/code><span class="mark"><code>FF_UNKNOWN_FIELD<\/code>/,
    );

    // The revision's page: its files against the applied ones (a line diff) and its plan (refused, with why).
    const revisionHref = `/console/factories/${f.id}/revisions/${encodeURIComponent(refused.revision)}`;
    expect(factoryPage.text).toContain(`href="${revisionHref}"`);
    const revision = await get(server, revisionHref, admin.cookie);
    expect(revision.status, revision.text).toBe(200);
    expect(revision.text).toContain('<code>webhooks/alerts.yaml</code> <span class="badge warn">changed</span>');
    expect(revision.text).toContain('+# typo below\n+enabeld: false');
    expect(revision.text).toContain('It cannot be applied');
    expect(revision.text).toContain(`href="${href.replace('#L4', '')}#L4"`);
    expect((await get(server, `/console/factories/${f.id}/revisions/main%40sha1%3Anope`, admin.cookie)).status).toBe(
      404,
    );

    await f.commit({ 'webhooks/alerts.yaml': webhookYaml('alerts-token') }, 'fix');
    expect((await f.sync()).result).toBe('applied');
    const fixed = await get(server, `/console/factories/${f.id}/files/webhooks/alerts.yaml`, admin.cookie);
    expect(fixed.status).toBe(200);
    expect(fixed.text).not.toContain('refused revision');
    expect(fixed.text).not.toContain('enabeld');

    // A valid revision's page shows its plan: what applying it would create, change and delete.
    const applied = (await server.api('GET', `/factories/${f.id}`)).body.status.applied_revision as string;
    const same = await get(server, `/console/factories/${f.id}/revisions/${encodeURIComponent(applied)}`, admin.cookie);
    expect(same.status).toBe(200);
    expect(same.text).toContain('The same files as the applied revision.');
    expect(same.text).toContain('No resource would change.');
  });
  it("lists a refused revision's changes beside its errors: files and resources created, changed, deleted", async () => {
    const f = await createGitFactory(server, {
      ...baseFiles(),
      'webhooks/alerts.yaml': webhookYaml('alerts-token'),
      'webhooks/old.yaml': webhookYaml('alerts-token'),
    });
    // (registering the factory may have applied it already)
    expect(['applied', 'unchanged']).toContain((await f.sync()).result);
    const revision = await f.commit(
      {
        'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\nenabeld: false\n',
        'runners/big.yaml': RUNNER,
        'README.md': '# notes\n',
      },
      'a runner, a typo, one webhook fewer',
      { remove: ['webhooks/old.yaml'] },
    );
    expect((await f.sync()).result).toBe('failed');
    const page = await get(
      server,
      `/console/factories/${f.id}/revisions/${encodeURIComponent(revision)}`,
      admin.cookie,
    );
    expect(page.status).toBe(200);
    const files = /<ul class="plain" id="file-changes">[\s\S]*?<\/ul>/.exec(page.text)?.[0] ?? '';
    expect(files).toMatch(/<strong>created<\/strong> \(1\):.*runners\/big\.yaml/);
    expect(files).toMatch(/<strong>changed<\/strong> \(1\):.*webhooks\/alerts\.yaml/);
    expect(files).toMatch(/<strong>deleted<\/strong> \(1\):.*webhooks\/old\.yaml/);
    expect(files).toContain('href="#file-webhooks-alerts-yaml"');
    expect(page.text).toContain('<h3 id="file-webhooks-alerts-yaml">');
    // beside the errors: what it would change, read from its files
    expect(page.text).toContain('It cannot be applied');
    const plan = /<div class="card" id="refused-plan">[\s\S]*?<\/div>/.exec(page.text)?.[0] ?? '';
    expect(plan).toMatch(/<strong>created<\/strong>: runner <a href="#file-runners-big-yaml"><code>big<\/code>/);
    expect(plan).toMatch(/<strong>changed<\/strong>: webhook <a [^>]*><code>alerts<\/code>/);
    expect(plan).toMatch(/<strong>deleted<\/strong>: webhook <a [^>]*><code>old<\/code>/);
  });
});
