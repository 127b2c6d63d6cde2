/**
 * A benchmark task's starting repositories (`startingRepoRefs`, `github.com:OWNER/REPO@<40-hex>`) checked out
 * in the run's workspace before the agent starts: each is fetched at its commit into a directory beside the
 * workspace (never through a path the agent could have linked), then moved in as `<workspace>/<REPO>`.
 * A repository's URL is the instance's base for its host (AGENTYARD_GIT_BASE_URL, AGENTYARD_GITLAB_BASE_URL)
 * plus `/OWNER/REPO.git`, and git may reach it only as a git source may (src/sources/url-policy.ts): refused
 * hosts stay refused, and git connects to the addresses the policy checked.
 */
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { gitStoppable } from '../sources/git-exec.ts';
import { classifyGitUrl, sanitizeUrl } from '../sources/url.ts';
import { parseGitEndpoint, refusedHostMessage } from '../sources/url-policy.ts';
import type { SourceUrlPolicy } from '../sources/url-policy.ts';
import { fileExistsInside } from './workspace-fs.ts';

/** The run metadata key a benchmark task's `startingRepoRefs` travel in, one per line. */
export const STARTING_REPO_REFS_KEY = 'agentyard_starting_repo_refs';

export interface RepositorySettings {
  /** Base URL per ref host: `github.com` (AGENTYARD_GIT_BASE_URL, default https://github.com), `gitlab.com`. */
  baseUrls: Record<string, string>;
  /** The git sources' URL policy; undefined: none (a worker, or a test without one). */
  policy?: SourceUrlPolicy | undefined;
}

export interface RepoRef {
  host: string;
  /** `OWNER/REPO` (GitLab: `GROUP/…/PROJECT`). */
  path: string;
  name: string;
  commit: string;
}

const REF = /^(github\.com|gitlab\.com):((?:[A-Za-z0-9_.-]+\/)+([A-Za-z0-9_.-]+))@([0-9a-f]{40})$/;

export function parseRepoRef(ref: string): RepoRef | undefined {
  const m = REF.exec(ref.trim());
  if (!m) return undefined;
  const segments = m[2]!.split('/');
  if (segments.some((s) => s === '.' || s === '..' || s.startsWith('.'))) return undefined;
  return { host: m[1]!, path: m[2]!, name: m[3]!.replace(/\.git$/, ''), commit: m[4]! };
}

export function repositorySettings(env: NodeJS.ProcessEnv): RepositorySettings {
  const base = (name: string, fallback: string): string => {
    const raw = env[name]?.trim() || fallback;
    const kind = classifyGitUrl(raw);
    if (kind !== 'https' && kind !== 'http' && kind !== 'file')
      throw new Error(`${name} must be an https, http or file URL, got "${sanitizeUrl(raw)}"`);
    return raw.replace(/\/+$/, '');
  };
  return {
    baseUrls: {
      'github.com': base('AGENTYARD_GIT_BASE_URL', 'https://github.com'),
      'gitlab.com': base('AGENTYARD_GITLAB_BASE_URL', 'https://gitlab.com'),
    },
  };
}

/**
 * The refs a run starts from: only a benchmark task's run carries them (the server creates it, source FACTORY);
 * metadata a member sets on an API run never makes the server fetch anything.
 */
export function startingRepoRefs(run: { source: string; metadata: Record<string, string> }): string[] {
  const { metadata } = run;
  if (run.source !== 'FACTORY' || !metadata.agentyard_benchmark) return [];
  return (metadata[STARTING_REPO_REFS_KEY] ?? '')
    .split('\n')
    .map((r) => r.trim())
    .filter(Boolean);
}

export class CheckoutError extends Error {}

/** Git's arguments that hold it to the addresses the policy checked (as GitSource does for a source). */
async function pinned(url: string, policy: SourceUrlPolicy | undefined): Promise<string[]> {
  const kind = classifyGitUrl(url);
  if (!kind) throw new CheckoutError(`${sanitizeUrl(url)} is not a git URL`);
  // remote helpers (`ext::`) are not a kind classifyGitUrl answers
  if (!policy) return [];
  const parsed = parseGitEndpoint(url, kind);
  if (parsed.kind === 'local') return [];
  if (parsed.kind === 'unparseable') throw new CheckoutError(refusedHostMessage(parsed.host));
  const { endpoint } = parsed;
  const checked = await policy.check(endpoint);
  if (!checked.ok) throw new CheckoutError(refusedHostMessage(endpoint.host));
  const isName = checked.addresses.length !== 1 || checked.addresses[0] !== endpoint.host;
  const addresses = checked.addresses.map((a) => (a.includes(':') ? `[${a}]` : a)).join(',');
  return [
    ...(isName ? ['-c', `http.curloptResolve=${endpoint.host}:${endpoint.port}:${addresses}`] : []),
    '-c',
    'http.followRedirects=false',
  ];
}

/**
 * Checks out every ref in `workspace` (a fresh one: the server made it and no agent ran in it yet), using
 * `scratch` (outside the workspace) for the clones. Throws a CheckoutError naming the ref that failed; `signal`
 * kills git (the execution was stopped).
 */
export async function checkoutRepositories(
  refs: readonly string[],
  workspace: string,
  scratch: string,
  settings: RepositorySettings,
  signal?: AbortSignal,
): Promise<string[]> {
  const parsed = refs.map((ref) => {
    const r = parseRepoRef(ref);
    if (!r) throw new CheckoutError(`${ref}: not a starting repository ref (github.com:OWNER/REPO@<40-hex commit>)`);
    return { ref, ...r };
  });
  const dirs: string[] = [];
  await rm(scratch, { recursive: true, force: true });
  await mkdir(scratch, { recursive: true, mode: 0o700 });
  try {
    for (const [i, r] of parsed.entries()) {
      const dir = dirs.includes(r.name) ? r.path.replaceAll('/', '-') : r.name;
      if (dirs.includes(dir) || fileExistsInside(workspace, dir))
        throw new CheckoutError(`${r.ref}: ${dir} is already in the workspace`);
      const base = settings.baseUrls[r.host];
      if (!base) throw new CheckoutError(`${r.ref}: no base URL for ${r.host}`);
      const url = `${base}/${r.path}.git`;
      const into = path.join(scratch, String(i));
      await mkdir(into);
      signal?.throwIfAborted();
      const git = (args: string[]) => gitStoppable(into, args, signal);
      try {
        await git(['init', '--quiet']);
        const fetchArgs = [...(await pinned(url, settings.policy)), 'fetch', '--quiet', '--no-tags'];
        try {
          await git([...fetchArgs, '--depth=1', url, r.commit]);
        } catch {
          signal?.throwIfAborted();
          // a server that does not serve a commit by its id: the whole history, then the commit in it
          await git([...fetchArgs, url, '+refs/heads/*:refs/remotes/origin/*']);
        }
        await git(['-c', 'advice.detachedHead=false', 'checkout', '--quiet', r.commit]);
        await git(['remote', 'add', 'origin', url]);
      } catch (err) {
        if (err instanceof CheckoutError) throw new CheckoutError(`${r.ref}: ${err.message}`);
        const detail =
          sanitizeUrl((err as Error).message)
            .split('\n')
            .find((l) => l.trim()) ?? 'git failed';
        throw new CheckoutError(`${r.ref}: could not check out ${r.commit} from ${sanitizeUrl(url)}: ${detail}`);
      }
      await rename(into, path.join(workspace, dir));
      dirs.push(dir);
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return dirs;
}
