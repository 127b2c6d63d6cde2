import path from 'node:path';
import { gitAuthFor } from './credentials.ts';
import { git, initBareRepository, readCommit, readSourceTree } from './git-exec.ts';
import { DEFAULT_SOURCE_LIMITS } from './limits.ts';
import type { SourceLimits } from './limits.ts';
import { SerialQueue } from './mutex.ts';
import { SourceError, isSourceError } from './types.ts';
import type { GitSourceSpec, Source, SourceSnapshot } from './types.ts';
import { classifyGitUrl, sanitizeMessage, sanitizeUrl } from './url.ts';
import type { GitUrlKind } from './url.ts';
import { parseGitEndpoint, refusedHostMessage } from './url-policy.ts';
import type { GitEndpoint } from './url-policy.ts';
import type { SourceUrlPolicy } from './url-policy.ts';

export interface GitSourceOptions {
  spec: GitSourceSpec;
  /** Where the local copy lives: `<dataDir>/sources/<factoryId>`. */
  dir: string;
  /** Reads the credentials secret (undefined when none is configured or it does not exist). */
  credentials: () => Promise<string | undefined>;
  /** Hosts the fetch may reach, checked before every fetch; none = any (tests of this class alone). */
  policy?: SourceUrlPolicy;
  /** What the tree may hold; counted before any blob is read. */
  limits?: SourceLimits;
}

/** Fetch failures of a commit that are reported as they are, not as "the commit is not in the repository". */
const KEEP_REASONS = new Set([
  'AuthenticationFailed',
  'InvalidCredentials',
  'URLNotAllowed',
  'InsecureURL',
  'InvalidURL',
]);

/** A local repository's failures all read the same: whether a path exists is nobody's business. */
const LOCAL_FAILURE = 'repository not found or not readable';

/**
 * Failures no retry fixes until someone changes the repository, the source or the credentials. HTTP statuses
 * only as git words them (`The requested URL returned error: 403`): the message also holds the URL, whose port
 * or path may contain the same digits.
 */
const TERMINAL_PATTERNS: [RegExp, string, string][] = [
  [/couldn't find remote ref|no such ref|invalid refspec/i, 'BranchNotFound', 'branch not found'],
  [
    /authentication failed|permission denied|could not read (username|password)|terminal prompts disabled|returned error: 40[13]\b/i,
    'AuthenticationFailed',
    'authentication failed',
  ],
  [
    /repository not found|does not appear to be a git repository|not a git repository|no such file or directory|returned error: 404\b/i,
    'RepositoryNotFound',
    'repository not found',
  ],
];

/** The terminal failure (reason, what it means) git's message names; undefined for one worth retrying. */
export function terminalFetchFailure(cause: string): { reason: string; meaning: string } | undefined {
  const found = TERMINAL_PATTERNS.find(([pattern]) => pattern.test(cause));
  return found ? { reason: found[1], meaning: found[2] } : undefined;
}

function isLoopback(url: string): boolean {
  try {
    return ['localhost', '127.0.0.1', '[::1]'].includes(new URL(url).hostname);
  } catch {
    return false;
  }
}

/** The URL and settings a fetch uses, held to the addresses the policy checked. */
interface PinnedRemote {
  url: string;
  args: string[];
  /** GIT_SSH_COMMAND options to add (the host-key alias of a pinned SSH host). */
  env: { sshOptions?: string };
  /** The network host, when there is one: its failures all read the same. */
  host?: string;
}

/** An SSH URL with the checked address in place of its name; the name stays what known_hosts is keyed by. */
function sshPinned(url: string, endpoint: GitEndpoint, address: string): PinnedRemote {
  const hostPart = address.includes(':') ? `[${address}]` : address;
  let pinned: string;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    const parsed = new URL(url);
    const user = parsed.username ? `${parsed.username}@` : '';
    pinned = `ssh://${user}${hostPart}:${endpoint.port}${parsed.pathname}`;
  } else {
    const at = url.indexOf('@');
    const rest = url.slice(at + 1).replace(/^(\[[^\]]*\]|[^:]*):/, '');
    pinned = `${url.slice(0, at)}@${hostPart}:${rest}`;
  }
  return { url: pinned, args: [], env: { sshOptions: `-o HostKeyAlias=${endpoint.host}` }, host: endpoint.host };
}

/** The credentials' environment, with the SSH options of a pinned host added to its ssh command. */
function withSshAlias(env: Record<string, string>, pinned: PinnedRemote['env']): Record<string, string> {
  if (!pinned.sshOptions) return env;
  const base = env.GIT_SSH_COMMAND ?? process.env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes';
  return { ...env, GIT_SSH_COMMAND: `${base} ${pinned.sshOptions}` };
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
  readonly #policy: SourceUrlPolicy | undefined;
  readonly #limits: SourceLimits;
  readonly #queue = new SerialQueue();
  #initialised: Promise<void> | undefined;

  constructor(options: GitSourceOptions) {
    this.#spec = options.spec;
    this.#dir = options.dir;
    this.#credentials = options.credentials;
    this.#policy = options.policy;
    this.#limits = options.limits ?? DEFAULT_SOURCE_LIMITS;
  }

  /**
   * The policy's check, and how git is held to the addresses it saw (the check and the connection must not
   * resolve apart): HTTP(S) gets the normalised URL, its name pinned with `http.curloptResolve` (git 2.37+)
   * and no redirects; SSH gets the checked address in place of the name, which stays the host-key alias.
   * Every refusal, unparseable or unresolved host reads the same.
   */
  async #reachable(kind: GitUrlKind, where: string): Promise<PinnedRemote> {
    const url = this.#spec.url;
    if (!this.#policy) return { url, args: [], env: {} };
    const parsed = parseGitEndpoint(url, kind);
    if (parsed.kind === 'local') return { url, args: [], env: {} };
    if (parsed.kind === 'unparseable')
      throw new SourceError('terminal', 'URLNotAllowed', `fetch ${where}: ${refusedHostMessage(parsed.host)}`);
    const { endpoint } = parsed;
    const checked = await this.#policy.check(endpoint);
    if (!checked.ok) {
      const message = `fetch ${where}: ${refusedHostMessage(endpoint.host)}`;
      if (checked.reason === 'unresolved') throw new SourceError('transient', 'FetchFailed', message);
      throw new SourceError('terminal', 'URLNotAllowed', message);
    }
    if (kind === 'ssh') return sshPinned(url, endpoint, checked.addresses[0]!);
    const pinned = new URL(url);
    const isName = checked.addresses.length !== 1 || checked.addresses[0] !== endpoint.host;
    const addresses = checked.addresses.map((a) => (a.includes(':') ? `[${a}]` : a)).join(',');
    return {
      url: pinned.href,
      host: endpoint.host,
      args: [
        ...(isName ? ['-c', `http.curloptResolve=${endpoint.host}:${endpoint.port}:${addresses}`] : []),
        '-c',
        'http.followRedirects=false',
      ],
      env: {},
    };
  }

  describe(): string {
    return `${sanitizeUrl(this.#spec.url)} (branch ${this.#spec.branch}${this.#spec.path ? `, path ${this.#spec.path}` : ''})`;
  }

  fetch(): Promise<SourceSnapshot> {
    return this.#queue.run(() => this.#fetch());
  }

  /** Opens the repository, creating it on first use; concurrent first uses share one `git init`. */
  #repo(): Promise<void> {
    this.#initialised ??= initBareRepository(this.#dir);
    this.#initialised.catch(() => {
      this.#initialised = undefined;
    });
    return this.#initialised;
  }

  /**
   * The tree of one commit that need not be on the production branch (a pull request's head), for the factory
   * check: fetched by sha, else through `refs` (e.g. `refs/pull/7/head`), and read like a revision. Never applied.
   */
  fetchCommit(sha: string, refs: readonly string[]): Promise<SourceSnapshot> {
    return this.#queue.run(async () => {
      const where = `${this.describe()} at ${sha}`;
      const local = `refs/agentyard/checked/${sha}`;
      let lastError: unknown;
      for (const ref of [sha, ...refs]) {
        try {
          await this.#gitFetch(where, [`+${ref}:${local}`]);
          if (await this.#hasCommit(sha)) break;
        } catch (err) {
          lastError = err;
        }
      }
      if (!(await this.#hasCommit(sha))) {
        // A transient failure may pass on retry, and bad credentials or a refused host need a person; anything
        // else (an unknown sha or ref) reads as the commit missing.
        if (isSourceError(lastError) && (lastError.kind === 'transient' || KEEP_REASONS.has(lastError.reason)))
          throw lastError;
        throw new SourceError('terminal', 'CommitNotFound', `fetch ${where}: the commit is not in the repository`);
      }
      try {
        return await this.#readRevision(sha, `${sha.slice(0, 12)}@sha1:${sha}`);
      } finally {
        await git(this.#dir, ['update-ref', '-d', local]).catch(() => '');
      }
    });
  }

  async #hasCommit(sha: string): Promise<boolean> {
    return (await git(this.#dir, ['cat-file', '-t', sha]).catch(() => '')).trim() === 'commit';
  }

  /** `git fetch` of `refspecs` from the source's URL, with its credentials and host policy; failures classified. */
  async #gitFetch(where: string, refspecs: readonly string[], prune = false): Promise<void> {
    const spec = this.#spec;
    const kind = classifyGitUrl(spec.url);
    if (!kind) throw new SourceError('terminal', 'InvalidURL', `fetch ${where}: unsupported URL`);
    await this.#repo();
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
    const local = kind === 'local' || kind === 'file';
    let remoteHost: string | undefined;
    try {
      const pinned = await this.#reachable(kind, where);
      remoteHost = pinned.host;
      await git(
        this.#dir,
        [
          ...pinned.args,
          'fetch',
          '--quiet',
          ...(prune ? ['--prune'] : []),
          '--no-tags',
          '--force',
          '--',
          pinned.url,
          ...refspecs,
        ],
        withSshAlias(auth.env, pinned.env),
      );
    } catch (err) {
      if (isSourceError(err)) throw err;
      const cause = gitCause(err, auth.secrets);
      const terminal = terminalFetchFailure(cause);
      if (local && terminal?.reason !== 'BranchNotFound')
        throw new SourceError('terminal', 'RepositoryNotFound', `fetch ${where}: ${LOCAL_FAILURE}`);
      if (terminal) throw new SourceError('terminal', terminal.reason, `fetch ${where}: ${terminal.meaning}: ${cause}`);
      // A network failure (refused, reset, timed out, not speaking git) reads like a refused host: what git
      // saw would tell an open port from a closed one.
      if (remoteHost !== undefined)
        throw new SourceError('transient', 'FetchFailed', `fetch ${where}: ${refusedHostMessage(remoteHost)}`);
      throw new SourceError('transient', 'FetchFailed', `fetch ${where}: ${cause}`);
    } finally {
      await auth.dispose();
    }
  }

  async #fetch(): Promise<SourceSnapshot> {
    const spec = this.#spec;
    const where = this.describe();
    const remoteRef = `refs/remotes/origin/${spec.branch}`;
    await this.#gitFetch(where, [`+refs/heads/${spec.branch}:${remoteRef}`], true);
    const sha = (
      await git(this.#dir, ['rev-parse', '--verify', '--quiet', `${remoteRef}^{commit}`]).catch(() => '')
    ).trim();
    if (!sha) throw new SourceError('terminal', 'BranchNotFound', `fetch ${where}: branch ${spec.branch} not found`);
    return this.#readRevision(sha, `${spec.branch}@sha1:${sha}`);
  }

  /** The factory tree of commit `sha` (under the source's path), read from the object database. */
  async #readRevision(sha: string, revision: string): Promise<SourceSnapshot> {
    const spec = this.#spec;
    let treeish = sha;
    if (spec.path) {
      const type = (await git(this.#dir, ['cat-file', '-t', `${sha}:${spec.path}`]).catch(() => '')).trim();
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
      const [tree, commit] = await Promise.all([
        readSourceTree(this.#dir, treeish, this.#limits),
        readCommit(this.#dir, sha),
      ]);
      return { revision, files: tree.files, commit, ...(tree.refused.length > 0 ? { refused: tree.refused } : {}) };
    } catch (err) {
      throw new SourceError('transient', 'ReadFailed', `read ${revision}: ${gitCause(err, [])}`);
    }
  }
}
