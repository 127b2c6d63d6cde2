/**
 * An octokit client acting as a GitHub App connection's installation on one repository, for the GitHub kinds
 * of integration jobs (a pull request's changed files, the factory check), and how a failed call is treated:
 * retried later (5xx, network, timeout, rate limit) or not (anything else).
 */
import { Octokit, RequestError } from 'octokit';
import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { githubApiUrl, mintInstallationToken } from './github-token.ts';
import { connectionSettings, installationForOwner } from './sql.ts';

/** Each API call's time limit. */
const CALL_TIMEOUT_MS = 15_000;

export type GithubClientResult =
  | { ok: true; octokit: Octokit }
  /** The connection cannot act on the repository (not an App, no installation, key missing): no retry helps. */
  | { ok: false; reason: string };

/** A client with an installation token scoped to `repository`; octokit's own retries are off (the job queue retries). */
export async function installationClient(
  q: Queryable,
  secrets: SecretProvider,
  job: { team_id: string; connection_id: string; input: { repository: string; installation_id: number | null } },
): Promise<GithubClientResult> {
  const settings = await connectionSettings(q, job.connection_id);
  if (!settings) return { ok: false, reason: 'the GitHub connection was deleted' };
  if (settings.mode !== 'app' || !settings.app_id || !settings.private_key_secret_name)
    return { ok: false, reason: 'the GitHub connection is a plain webhook: API calls need a GitHub App connection' };
  const repository = job.input.repository;
  const installationId =
    job.input.installation_id !== null
      ? String(job.input.installation_id)
      : await installationForOwner(q, job.connection_id, repository.split('/')[0]!);
  if (!installationId) return { ok: false, reason: `the GitHub App has no installation seen for ${repository}` };
  const privateKey = await secrets.get(job.team_id, settings.private_key_secret_name);
  if (!privateKey)
    return {
      ok: false,
      reason: `the managed secret ${settings.private_key_secret_name} (the App's private key) is missing`,
    };
  const baseUrl = githubApiUrl();
  const { token } = await mintInstallationToken({
    appId: settings.app_id,
    privateKey,
    installationId,
    repository,
    baseUrl,
  });
  const octokit = new Octokit({
    auth: token,
    baseUrl,
    retry: { enabled: false },
    throttle: { enabled: false },
    request: {
      fetch: (url: string | URL, init?: RequestInit) =>
        fetch(url, { ...init, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }),
    },
  });
  return { ok: true, octokit };
}

/**
 * Whether a failed GitHub call may pass later, and when: server errors, network failures and time-outs soon;
 * a rate limit when it resets (`retry-after`, or `x-ratelimit-reset` with no calls remaining).
 */
export function retryAdvice(err: unknown, now = Date.now()): { retry: boolean; afterMs?: number; message: string } {
  if (!(err instanceof RequestError)) {
    return { retry: true, message: err instanceof Error ? err.message : String(err) };
  }
  const headers = err.response?.headers ?? {};
  const message = `GitHub answered ${err.status}: ${err.message}`.slice(0, 500);
  const retryAfter = Number(headers['retry-after']);
  if (Number.isFinite(retryAfter) && retryAfter > 0) return { retry: true, afterMs: retryAfter * 1000, message };
  if ((err.status === 403 || err.status === 429) && String(headers['x-ratelimit-remaining']) === '0') {
    const reset = Number(headers['x-ratelimit-reset']) * 1000;
    return { retry: true, ...(Number.isFinite(reset) && reset > now ? { afterMs: reset - now } : {}), message };
  }
  if (err.status === 429 || err.status >= 500 || err.status === 0) return { retry: true, message };
  return { retry: false, message };
}
