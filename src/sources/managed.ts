import type { FactoryFileInput } from '../definitions/load.ts';
import type { Db } from '../kernel/db.ts';
import { git, gitCommand, initBareRepository, readTree } from './git-exec.ts';
import { gitOnThread } from './git-thread.ts';
import type { ManagedCommit } from './sql.ts';
import { insertManagedCommits, isCommitTaken, listManagedCommits, managedCommitFiles } from './sql.ts';
import { SerialQueue } from '../kernel/loop.ts';
import { SourceError } from './types.ts';
import type { Source, SourceSnapshot } from './types.ts';

export const MANAGED_BRANCH = 'main';
const BRANCH_REF = `refs/heads/${MANAGED_BRANCH}`;
const COMMITTER = 'Agentyard <agentyard@localhost>';

export interface CommitAuthor {
  name: string;
  email: string;
}

/** Where a managed factory's commits are recorded: the service's database. */
export interface ManagedRecord {
  db: Db;
  factoryId: string;
}

function sanitizeIdent(text: string): string {
  return text.replace(/[<>\n\r]/g, ' ').trim() || 'unknown';
}

/** A path for git fast-import: quoted C-style when it needs quoting. */
function importPath(p: string): string {
  return /^"|[\n\\"]/.test(p) ? JSON.stringify(p) : p;
}

const byPath = (a: FactoryFileInput, b: FactoryFileInput): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * The repository of a managed factory. Its commits are recorded in the database (`managed_commits`), which is
 * what every process reads; a bare git repository under this process's data directory mirrors them, so that
 * the history of a managed factory is a git log. Before each read or write the mirror takes the commits it
 * lacks from the database — importing a commit's tree, parent, identities, times and message again gives the
 * same commit id — so processes sharing a database share one history, and a process started with an empty
 * data directory rebuilds it. A write inserts its commit as the head's successor: when another process wrote
 * first, the insert fails and the write is refused as a conflict (the caller starts again from the new head).
 */
export class ManagedRepository implements Source {
  readonly #dir: string;
  readonly #record: ManagedRecord;
  readonly #queue = new SerialQueue();
  #initialised: Promise<void> | undefined;
  /** The newest commit this mirror holds, as recorded. */
  #head: ManagedCommit | undefined;

  constructor(dir: string, record: ManagedRecord) {
    this.#dir = dir;
    this.#record = record;
  }

  get dir(): string {
    return this.#dir;
  }

  describe(): string {
    return `managed repository (branch ${MANAGED_BRANCH})`;
  }

  /**
   * `git <args>` in the mirror, created on first use (concurrent first uses share one `git init`). Every git
   * process runs from the git thread's spawner (src/sources/git-thread.ts), never forking the server.
   */
  async #git(args: string[], input?: string): Promise<string> {
    this.#initialised ??= initBareRepository(this.#dir, [`--initial-branch=${MANAGED_BRANCH}`]);
    this.#initialised.catch(() => {
      this.#initialised = undefined;
    });
    await this.#initialised;
    if (input === undefined) return git(this.#dir, args);
    return (await gitOnThread(gitCommand(this.#dir, args, {}, input))).toString('utf8');
  }

  /** The commit at the head of `main`, or undefined before the first commit. */
  head(): Promise<string | undefined> {
    return this.#queue.run(async () => (await this.#sync())?.sha);
  }

  fetch(): Promise<SourceSnapshot | undefined> {
    return this.#queue.run(async () => {
      const head = await this.#sync();
      return head ? snapshotOf(head) : undefined;
    });
  }

  /**
   * Commits `files` as the whole tree of a new commit on `main`, if `main` is still at `parent`
   * (undefined = no commit yet), in this process and in the database. Answers the new commit, or throws a
   * transient `Conflict` when `main` moved.
   */
  commit(
    files: readonly FactoryFileInput[],
    author: CommitAuthor,
    message: string,
    parent: string | undefined,
  ): Promise<string> {
    return this.#queue.run(async () => {
      const head = await this.#sync();
      if (head?.sha !== parent) throw this.#moved(parent, head?.sha);
      const now = Math.floor(Date.now() / 1000);
      const commit: ManagedCommit = {
        seq: (head?.seq ?? 0) + 1,
        sha: '',
        parentSha: parent ?? null,
        authorName: sanitizeIdent(author.name),
        authorEmail: sanitizeIdent(author.email),
        authoredAt: now,
        committedAt: now,
        message: message.endsWith('\n') ? message : `${message}\n`,
        files: files.map((f) => ({ path: f.path, content: f.content })).sort(byPath),
      };
      commit.sha = await this.#import([commit]);
      try {
        await insertManagedCommits(this.#record.db, this.#record.factoryId, [commit]);
      } catch (err) {
        // Not recorded: the mirror goes back to the recorded head.
        await this.#pointBranchAt(head?.sha);
        if (isCommitTaken(err)) throw this.#moved(parent, 'a commit from another process');
        throw err;
      }
      this.#head = commit;
      return commit.sha;
    });
  }

  #moved(expected: string | undefined, found: string | undefined): SourceError {
    return new SourceError(
      'transient',
      'Conflict',
      `commit to ${this.describe()}: the branch moved (expected ${expected ?? 'no commit'}, found ${found ?? 'no commit'})`,
    );
  }

  /** Brings the mirror up to the recorded head and answers it (undefined: no commit yet). */
  async #sync(): Promise<ManagedCommit | undefined> {
    const { db, factoryId } = this.#record;
    const newer = await listManagedCommits(db, factoryId, this.#head?.seq ?? 0);
    if (newer.length === 0) {
      if (this.#head) return this.#head;
      // Nothing recorded: a repository written before the database kept managed commits is recorded as it is.
      if (await this.#adopt()) return this.#sync();
      return undefined;
    }
    const local = new Set((await this.#git(['rev-list', '--all']).catch(() => '')).split('\n').filter(Boolean));
    const missing = newer.filter((c) => !local.has(c.sha));
    const head = newer[newer.length - 1]!;
    const files = await managedCommitFiles(db, factoryId, [...new Set([...missing.map((c) => c.seq), head.seq])]);
    for (const commit of newer) commit.files = files.get(commit.seq) ?? [];
    if (missing.length > 0) {
      // Each commit names its parent, so the last one's id covers the whole chain.
      const last = missing[missing.length - 1]!;
      const sha = await this.#import(missing);
      if (sha !== last.sha) {
        throw new SourceError(
          'terminal',
          'HistoryMismatch',
          `${this.describe()}: commit ${last.seq} imports as ${sha}, recorded as ${last.sha}`,
        );
      }
    }
    await this.#pointBranchAt(head.sha);
    this.#head = head;
    return head;
  }

  /**
   * Writes commits, oldest first, in one git fast-import run and answers the last one's id; `main` points at
   * it afterwards. A commit whose parent is in the same run refers to it by mark.
   */
  async #import(commits: readonly ManagedCommit[]): Promise<string> {
    // git's standard input is written as UTF-8, the encoding each `data` length counts
    const chunks: string[] = [];
    const data = (text: string): void => {
      chunks.push(`data ${Buffer.byteLength(text, 'utf8')}\n`, text, '\n');
    };
    const marks = new Map<string, number>();
    for (const [i, commit] of commits.entries()) {
      const mark = i + 1;
      // `reset` first: a commit without a parent must not take whatever `main` points at as one.
      chunks.push(`reset ${BRANCH_REF}\ncommit ${BRANCH_REF}\nmark :${mark}\n`);
      chunks.push(
        `author ${commit.authorName} <${commit.authorEmail}> ${commit.authoredAt} +0000\ncommitter ${COMMITTER} ${commit.committedAt} +0000\n`,
      );
      data(commit.message);
      if (commit.parentSha)
        chunks.push(`from ${marks.has(commit.parentSha) ? `:${marks.get(commit.parentSha)}` : commit.parentSha}\n`);
      chunks.push('deleteall\n');
      for (const file of commit.files) {
        chunks.push(`M 100644 inline ${importPath(file.path)}\n`);
        data(file.content);
      }
      chunks.push('\n');
      if (commit.sha) marks.set(commit.sha, mark);
    }
    chunks.push('done\n');
    await this.#git(['fast-import', '--quiet', '--force', '--done'], chunks.join(''));
    const sha = await this.#branchHead();
    if (!sha || sha === commits[commits.length - 1]?.parentSha)
      throw new Error('git fast-import did not advance the branch');
    return sha;
  }

  async #pointBranchAt(sha: string | undefined): Promise<void> {
    if ((await this.#branchHead()) === sha) return;
    if (sha) await this.#git(['update-ref', BRANCH_REF, sha]);
    else await this.#git(['update-ref', '-d', BRANCH_REF]);
  }

  /**
   * Records the commits of a mirror that has history the database does not (a repository from before
   * migration 0012). Answers false when there is nothing to record. When another process records first,
   * its history wins and this mirror follows it at the next sync.
   */
  async #adopt(): Promise<boolean> {
    const head = await this.#branchHead();
    if (!head) return false;
    const shas = (await this.#git(['rev-list', '--reverse', '--first-parent', head])).split('\n').filter(Boolean);
    const commits: ManagedCommit[] = [];
    for (const [i, sha] of shas.entries()) {
      // A managed tree holds regular files only (fast-import writes every one as 100644).
      const files = (await readTree(this.#dir, sha, { everyFile: true })).map((f) => ({
        path: f.path,
        content: f.content,
      }));
      commits.push({ ...parseCommitObject(await this.#git(['cat-file', 'commit', sha])), seq: i + 1, sha, files });
    }
    try {
      await insertManagedCommits(this.#record.db, this.#record.factoryId, commits);
    } catch (err) {
      if (!isCommitTaken(err)) throw err;
    }
    return true;
  }

  /** The commit `main` of this mirror points at, or undefined. */
  async #branchHead(): Promise<string | undefined> {
    return (
      (await this.#git(['rev-parse', '--verify', '--quiet', `${BRANCH_REF}^{commit}`]).catch(() => '')).trim() ||
      undefined
    );
  }
}

function snapshotOf(commit: ManagedCommit): SourceSnapshot {
  return {
    revision: `${MANAGED_BRANCH}@sha1:${commit.sha}`,
    files: commit.files.map((f) => ({ path: f.path, content: f.content })),
    commit: {
      sha: commit.sha,
      author: `${commit.authorName} <${commit.authorEmail}>`,
      message: commit.message.trim(),
      time: new Date(commit.authoredAt * 1000),
    },
  };
}

/** The identities, times, parent and message of a raw commit object (`git cat-file commit`). */
function parseCommitObject(raw: string): Omit<ManagedCommit, 'seq' | 'sha' | 'files'> {
  const end = raw.indexOf('\n\n');
  const headers = (end < 0 ? raw : raw.slice(0, end)).split('\n');
  const message = end < 0 ? '' : raw.slice(end + 2);
  let parentSha: string | null = null;
  let author: RegExpExecArray | null = null;
  let committedAt = 0;
  for (const line of headers) {
    if (line.startsWith('parent ') && parentSha === null) parentSha = line.slice(7).trim();
    else if (line.startsWith('author ')) author = /^author (.*) <(.*)> (\d+) [+-]\d{4}$/.exec(line);
    else if (line.startsWith('committer ')) committedAt = Number(/ (\d+) [+-]\d{4}$/.exec(line)?.[1] ?? 0);
  }
  if (!author) throw new SourceError('terminal', 'ReadFailed', 'a managed commit has no author line');
  return {
    parentSha,
    authorName: author[1]!,
    authorEmail: author[2]!,
    authoredAt: Number(author[3]),
    committedAt,
    message,
  };
}
