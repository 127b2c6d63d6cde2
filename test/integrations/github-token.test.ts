/**
 * Installation tokens for runs started by a GitHub App connection's events, minted through @octokit/auth-app
 * against a local stand-in of GitHub's API: scoped to the event's repository, only for App connections.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubRunEnv, mintInstallationToken } from '../../src/integrations/github-token.ts';
import { upsertInstallation } from '../../src/integrations/sql.ts';
import { ENGINES } from '../support/db.ts';
import { startGithubApi } from '../support/github-api.ts';
import type { GithubApiStandIn } from '../support/github-api.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { defaultTeamId } from '../ingress/support.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

describe.each(ENGINES)('GitHub installation tokens on %s', (engine) => {
  let server: TestServer;
  let github: GithubApiStandIn;
  beforeAll(async () => {
    github = await startGithubApi(publicKey);
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
    await github?.close();
  });

  it('mints a token for one repository of the installation', async () => {
    const minted = await mintInstallationToken({
      appId: '4242',
      privateKey,
      installationId: '77',
      repository: 'acme/web',
      baseUrl: github.url,
    });
    expect(minted.token).toMatch(/^ghs_standin/);
    expect(github.tokenRequests.at(-1)).toEqual({ installationId: '77', appId: '4242', repositories: ['web'] });
  });

  it("gives a GitHub run GH_TOKEN and GITHUB_TOKEN through the team's App connection, and nothing otherwise", async () => {
    process.env.AGENTYARD_GITHUB_API_URL = github.url;
    try {
      for (const [name, value] of Object.entries({ 'app-key': privateKey, 'app-hook': 'hook-secret-value' }))
        expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
      const put = await server.api('PUT', '/integrations/github', {
        mode: 'app',
        app_id: 4242,
        private_key_secret_name: 'app-key',
        webhook_secret_name: 'app-hook',
      });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      const { db } = server.server.ctx;
      await upsertInstallation(db, put.body.id, 31337, 'Acme');
      const secrets = { get: async (_team: string, name: string) => (name === 'app-key' ? privateKey : undefined) };
      const teamId = await defaultTeamId(server);
      const run = {
        team_id: teamId,
        source: 'GITHUB_ACTION',
        metadata: { provider: 'github', repository: 'acme/web' },
      };
      const env = await githubRunEnv(db, secrets, run);
      expect(env.GH_TOKEN).toMatch(/^ghs_standin/);
      expect(env.GITHUB_TOKEN).toBe(env.GH_TOKEN);
      expect(github.tokenRequests.at(-1)).toEqual({ installationId: '31337', appId: '4242', repositories: ['web'] });
      expect((await server.api('GET', '/integrations/github')).body.installations).toEqual([
        expect.objectContaining({ installation_id: '31337', account_login: 'Acme' }),
      ]);

      expect(await githubRunEnv(db, secrets, { ...run, source: 'SLACK' })).toEqual({});
      expect(
        await githubRunEnv(db, secrets, { ...run, metadata: { provider: 'github', repository: 'other/web' } }),
      ).toEqual({});
      await server.api('PUT', '/integrations/github', { mode: 'webhook', webhook_secret_name: 'app-hook' });
      expect(await githubRunEnv(db, secrets, run)).toEqual({});
    } finally {
      delete process.env.AGENTYARD_GITHUB_API_URL;
    }
  });
});
