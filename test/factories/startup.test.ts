import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { baseFiles } from './fixtures.ts';
import { whenFactoryTold } from './support.ts';

// `agentyard serve --factory <git URL>`: the engine does not matter here.
describe('serve --factory with a git URL', () => {
  let remote: GitRemote;
  let server: TestServer;

  beforeAll(async () => {
    remote = await createGitRemote();
    await remote.write(baseFiles());
    await remote.commitAndPush('initial');
    server = await startTestServer('pglite', { config: { factory: remote.bare } });
  });
  afterAll(async () => {
    await server?.close();
    remote?.close();
  });

  it('creates a git factory named after the repository and applies its production branch', async () => {
    const [factory] = (await server.api('GET', '/factories')).body.factories;
    expect(factory).toMatchObject({
      name: 'remote',
      source: { type: 'git', url: remote.bare, branch: 'main' },
      read_only: true,
    });
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${factory.id}`)).body.status.state === 'applied',
      'the first apply',
    );
    const refused = await server.api('POST', `/factories/${factory.id}/apply`, { files: [] });
    expect(refused.body.detail).toBe(
      `factory remote is defined in the repository ${remote.bare} (branch main): commit changes there`,
    );
  });
});
