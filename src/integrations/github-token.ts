/**
 * Installation tokens for runs that a GitHub App connection's event started: short-lived, scoped to the
 * event's repository, minted through @octokit/auth-app against AGENTYARD_GITHUB_API_URL (default the real API).
 */
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from 'octokit';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Queryable } from '../kernel/db.ts';
import { getConnection, installationForOwner } from './sql.ts';

export function githubApiUrl(env: NodeJS.ProcessEnv = process.env): string {
  return (env.AGENTYARD_GITHUB_API_URL ?? 'https://api.github.com').replace(/\/+$/, '');
}

/** A token for one repository of one installation of the App. */
export async function mintInstallationToken(options: {
  appId: string;
  privateKey: string;
  installationId: string;
  repository: string;
  baseUrl?: string;
}): Promise<{ token: string; expiresAt: string }> {
  const auth = createAppAuth({
    appId: options.appId,
    privateKey: options.privateKey,
    request: new Octokit({ baseUrl: options.baseUrl ?? githubApiUrl() }).request,
  });
  const result = await auth({
    type: 'installation',
    installationId: options.installationId,
    repositoryNames: [options.repository.split('/')[1]!],
  });
  return { token: result.token, expiresAt: result.expiresAt };
}

/**
 * The environment a run gets for its repository when its team's GitHub connection is an App that has an
 * installation on the repository's owner: GH_TOKEN and GITHUB_TOKEN. Empty otherwise (a plain webhook
 * connection has no identity to lend).
 */
export async function githubRunEnv(
  q: Queryable,
  secrets: SecretProvider,
  run: { team_id: string; source: string; metadata: Record<string, string> },
): Promise<Record<string, string>> {
  const repository = run.metadata.repository;
  if (run.source !== 'GITHUB_ACTION' || !repository || run.metadata.provider !== 'github') return {};
  const connection = await getConnection(q, run.team_id, 'github');
  if (connection?.settings.mode !== 'app') return {};
  const { app_id: appId, private_key_secret_name: keyName } = connection.settings;
  if (!appId || !keyName) return {};
  const installationId = await installationForOwner(q, connection.id, repository.split('/')[0]!);
  if (!installationId) return {};
  const privateKey = await secrets.get(run.team_id, keyName);
  if (!privateKey) return {};
  const { token } = await mintInstallationToken({ appId, privateKey, installationId, repository });
  return { GH_TOKEN: token, GITHUB_TOKEN: token };
}
