import type { Diagnostic } from '../definitions/diagnostic.ts';
import type { FactoryFileInput } from '../definitions/load.ts';

/** Where a factory's definition lives, as stored in `factories.source`. */
export type SourceSpec = GitSourceSpec | DirectorySourceSpec | ManagedSourceSpec;

export interface GitSourceSpec {
  type: 'git';
  url: string;
  /** The production branch: only its commits apply. */
  branch: string;
  /** Sub-directory of the repository holding factory.yaml; null = the root. */
  path: string | null;
  poll_interval_seconds: number;
  /** Managed secret holding an HTTPS token (`token` or `user:token`) or an SSH private key. */
  credentials_secret: string | null;
  /** Managed secret that authenticates push notifications on the sync hook (GitHub/GitLab webhook secret). */
  push_secret: string | null;
  /**
   * The GitHub repository (`owner/name`) this source is, when its URL does not say (a mirror, a local path):
   * pull requests to it get the factory check. Absent or null: derived from a GitHub URL.
   */
  github_repository?: string | null;
}

export interface DirectorySourceSpec {
  type: 'directory';
  path: string;
}

export interface ManagedSourceSpec {
  type: 'managed';
}

export interface SourceCommit {
  sha: string | null;
  author: string | null;
  message: string | null;
  time: Date | null;
}

/** One revision of a factory tree. */
export interface SourceSnapshot {
  /** `branch@sha1:<sha>` for git and managed sources, `directory@sha256:<digest>` for directories. */
  revision: string;
  files: FactoryFileInput[];
  commit: SourceCommit;
  /** The tree is over the source limits: `FF_LIMIT_EXCEEDED` diagnostics, and `files` is empty (nothing was read). */
  refused?: Diagnostic[];
}

/** `transient`: may succeed if retried (network, lock); `terminal`: needs a human (bad URL, missing path, bad credentials). */
export type SourceFailureKind = 'transient' | 'terminal';

/** A source that could not produce a revision. The message names the source, never a credential. */
export class SourceError extends Error {
  readonly kind: SourceFailureKind;
  /** PascalCase reason for the status (`FetchFailed`, `BranchNotFound`, `PathNotFound`, ...). */
  readonly reason: string;

  constructor(kind: SourceFailureKind, reason: string, message: string) {
    super(message);
    this.name = 'SourceError';
    this.kind = kind;
    this.reason = reason;
  }
}

export function isSourceError(err: unknown): err is SourceError {
  return err instanceof SourceError;
}

/** Something that can produce the newest revision of a factory tree. */
export interface Source {
  /** Fetches (when remote) and reads the newest revision; undefined when there is none yet (an empty managed repository). */
  fetch(): Promise<SourceSnapshot | undefined>;
  /** For messages: the repository and branch, or the directory. Never holds credentials. */
  describe(): string;
}
