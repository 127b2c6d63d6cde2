import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { gitAuthFor } from './credentials.ts';
import { gitClient, openBareRepository, readCommit, readTree } from './git-exec.ts';
import { SerialQueue } from './mutex.ts';
import { SourceError } from './types.ts';
import type { GitSourceSpec, Source, SourceSnapshot } from './types.ts';
import { classifyGitUrl, sanitizeMessage, sanitizeUrl } from './url.ts';

export interface GitSourceOptions {
  spec: GitSourceSpec;
  /** Where the local copy lives: `<dataDir>/sources/<factoryId>`. */
  dir: string;
  /** Reads the credentials secret (undefined when none is configured or it does not exist). */
  credentials: () => Promise<string | undefined>;
}

/** Failures no retry fixes until someone changes the repository, the source or the credentials. */
const TERMINAL_PATTERNS: [RegExp, string, string][] = [
  [/couldn't find remote ref|no such ref|invalid refspec/i, 'BranchNotFound', 'branch not found'],
  [
    /authentication failed|permission denied|could not read (username|password)|terminal prompts disabled|403|401/i,
    'AuthenticationFailed',
    'authentication failed',
  ],
  [
    /repository not found|does not appear to be a git repository|not a git repository|no such file or directory|404/i,
    'RepositoryNotFound',
    'repository not found',
  ],
];

function isLoopback(url: string): boolean {
  try {
    return ['localhost', '127.0.0.1', '[::1]'].includes(new URL(url).hostname);
  } catch {
    return false;
  }
}

/** The last meaningful line of git's stderr, without credentials. */
function gitCause(err: unknown, secrets: string[]): string {
  const text = err instanceof Error ? err.message : String(err);
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^hint:/i.test(l));
  const fatal = lines.filter((l) => /^(fatal|error):/i.test(l));
  return sanitizeMessage(
    (fatal.length ? fatal.join('; ') : (lines[lines.length - 1] ?? text)).replace(/^(fatal|error):\s*/i, ''),
    secrets,
  );
}

/**
 * A git repository's production branch. The first fetch fills a bare copy under the data directory; later
 * fetches bring only new objects. Files are read from git's object database at the branch head, never from
 * a working tree, so a half-written checkout can never be applied.
 */
export class GitSource implements Source {
  readonly #spec: GitSourceSpec;
  readonly #dir: string;
  readonly #credentials: () => Promise<string | undefined>;
  readonly #queue = new SerialQueue();
  #git: Promise<SimpleGit> | undefined;

  constructor(options: GitSourceOptions) {
    this.#spec = options.spec;
    this.#dir = options.dir;
    this.#credentials = options.credentials;
  }

  describe(): string {
    return `${sanitizeUrl(this.#spec.url)} (branch ${this.#spec.branch}${this.#spec.path ? `, path ${this.#spec.path}` : ''})`;
  }

  fetch(): Promise<SourceSnapshot> {
    return this.#queue.run(() => this.#fetch());
  }

  /** Opens the repository, creating it on first use; concurrent first uses share one `git init`. */
  #repo(): Promise<SimpleGit> {
    this.#git ??= openBareRepository(this.#dir);
    this.#git.catch(() => {
      this.#git = undefined;
    });
    return this.#git;
  }

  async #fetch(): Promise<SourceSnapshot> {
    const spec = this.#spec;
    const where = this.describe();
    const kind = classifyGitUrl(spec.url);
    if (!kind) throw new SourceError('terminal', 'InvalidURL', `fetch ${where}: unsupported URL`);
    const repo = await this.#repo();
    const secret = await this.#credentials();
    if (secret !== undefined && kind === 'http' && !isLoopback(spec.url)) {
      throw new SourceError(
        'terminal',
        'InsecureURL',
        `fetch ${where}: refusing to send credentials over plain http; use an https:// URL`,
      );
    }
    let auth;
    try {
      auth = await gitAuthFor(secret, kind, path.join(path.dirname(this.#dir), 'known_hosts'));
    } catch (err) {
      throw new SourceError('terminal', 'InvalidCredentials', `fetch ${where}: ${(err as Error).message}`);
    }
    const remoteRef = `refs/remotes/origin/${spec.branch}`;
    try {
      await gitClient(this.#dir, auth.env).raw([
        'fetch',
        '--quiet',
        '--prune',
        '--no-tags',
        '--force',
        '--',
        spec.url,
        `+refs/heads/${spec.branch}:${remoteRef}`,
      ]);
    } catch (err) {
      const cause = gitCause(err, auth.secrets);
      const terminal = TERMINAL_PATTERNS.find(([pattern]) => pattern.test(cause));
      if (terminal) throw new SourceError('terminal', terminal[1], `fetch ${where}: ${terminal[2]}: ${cause}`);
      throw new SourceError('transient', 'FetchFailed', `fetch ${where}: ${cause}`);
    } finally {
      await auth.dispose();
    }
    const sha = (await repo.raw(['rev-parse', '--verify', '--quiet', `${remoteRef}^{commit}`]).catch(() => '')).trim();
    if (!sha) throw new SourceError('terminal', 'BranchNotFound', `fetch ${where}: branch ${spec.branch} not found`);
    const revision = `${spec.branch}@sha1:${sha}`;
    let treeish = sha;
    if (spec.path) {
      const type = (await repo.raw(['cat-file', '-t', `${sha}:${spec.path}`]).catch(() => '')).trim();
      if (type !== 'tree') {
        throw new SourceError(
          'terminal',
          'PathNotFound',
          `read ${revision}: ${spec.path} is ${type === 'blob' ? 'a file, not a directory' : 'not in the repository'}`,
        );
      }
      treeish = `${sha}:${spec.path}`;
    }
    try {
      const [files, commit] = await Promise.all([readTree(repo, this.#dir, treeish), readCommit(repo, sha)]);
      return { revision, files, commit };
    } catch (err) {
      throw new SourceError('transient', 'ReadFailed', `read ${revision}: ${gitCause(err, [])}`);
    }
  }
}
