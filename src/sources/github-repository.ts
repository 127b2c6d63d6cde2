/** Which GitHub repository a git source is: the one its pull requests are checked for. */
import type { SourceSpec } from './types.ts';

/** The web host of a GitHub API URL: `https://api.github.com` → github.com, `https://ghe.example/api/v3` → ghe.example. */
export function githubWebHost(apiUrl: string): string | undefined {
  try {
    const host = new URL(apiUrl).hostname.toLowerCase();
    return host === 'api.github.com' ? 'github.com' : host;
  } catch {
    return undefined;
  }
}

/**
 * `owner/name` of a git source on GitHub: `source.github_repository` when set, otherwise from a URL on the
 * GitHub host (`https://github.com/o/r(.git)`, `ssh://git@github.com/o/r.git`, `git@github.com:o/r.git`).
 */
export function githubRepositoryOf(spec: SourceSpec, apiUrl: string): string | undefined {
  if (spec.type !== 'git') return undefined;
  if (spec.github_repository) return spec.github_repository;
  const host = githubWebHost(apiUrl);
  if (!host) return undefined;
  const scp = /^[^@/]+@([^:/]+):([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(spec.url);
  if (scp) return scp[1]!.toLowerCase() === host ? `${scp[2]}/${scp[3]}` : undefined;
  try {
    const url = new URL(spec.url);
    if (url.hostname.toLowerCase() !== host) return undefined;
    const match = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url.pathname);
    return match ? `${match[1]}/${match[2]}` : undefined;
  } catch {
    return undefined;
  }
}
