import { spawn } from 'node:child_process';
import type { SimpleGit } from 'simple-git';
import type { FactoryFileInput } from '../definitions/load.ts';
import { BASE_GIT_ENV, inheritedEnv, openBareRepository, readCommit, readTree } from './git-exec.ts';
import { SerialQueue } from './mutex.ts';
import { SourceError } from './types.ts';
import type { Source, SourceSnapshot } from './types.ts';

export const MANAGED_BRANCH = 'main';

export interface CommitAuthor {
  name: string;
  email: string;
}

function sanitizeIdent(text: string): string {
  return text.replace(/[<>\n\r]/g, ' ').trim() || 'unknown';
}

/** A path for git fast-import: quoted C-style when it needs quoting. */
function importPath(p: string): string {
  return /^"|[\n\\"]/.test(p) ? JSON.stringify(p) : p;
}

/**
 * The repository of a managed factory: a bare repository under the data directory whose `main` branch
 * holds every applied revision, so that the history of a managed factory is a git log.
 */
export class ManagedRepository implements Source {
  readonly #dir: string;
  readonly #queue = new SerialQueue();
  #git: Promise<SimpleGit> | undefined;

  constructor(dir: string) {
    this.#dir = dir;
  }

  get dir(): string {
    return this.#dir;
  }

  describe(): string {
    return `managed repository (branch ${MANAGED_BRANCH})`;
  }

  /** Opens the repository, creating it on first use; concurrent first uses share one `git init`. */
  #repo(): Promise<SimpleGit> {
    this.#git ??= openBareRepository(this.#dir, [`--initial-branch=${MANAGED_BRANCH}`]);
    this.#git.catch(() => {
      this.#git = undefined;
    });
    return this.#git;
  }


  /** The commit at the head of `main`, or undefined for a repository without commits. */
  async head(): Promise<string | undefined> {
    const git = await this.#repo();
    const sha = (await git.raw(['rev-parse', '--verify', '--quiet', `refs/heads/${MANAGED_BRANCH}^{commit}`]).catch(() => '')).trim();
    return sha || undefined;
  }

  fetch(): Promise<SourceSnapshot | undefined> {
    return this.#queue.run(() => this.#read());
  }

  async #read(): Promise<SourceSnapshot | undefined> {
    const sha = await this.head();
    if (!sha) return undefined;
    const git = await this.#repo();
    try {
      const [files, commit] = await Promise.all([readTree(git, this.#dir, sha), readCommit(git, sha)]);
      return { revision: `${MANAGED_BRANCH}@sha1:${sha}`, files, commit };
    } catch (err) {
      throw new SourceError('transient', 'ReadFailed', `read ${this.describe()}: ${(err as Error).message}`);
    }
  }

  /**
   * Commits `files` as the whole tree of a new commit on `main`, if `main` is still at `parent`
   * (undefined = no commit yet). Answers the new commit, or throws when `main` moved.
   */
  commit(files: readonly FactoryFileInput[], author: CommitAuthor, message: string, parent: string | undefined): Promise<string> {
    return this.#queue.run(async () => {
      const git = await this.#repo();
      const head = await this.head();
      if (head !== parent) throw new SourceError('transient', 'Conflict', `commit to ${this.describe()}: the branch moved (expected ${parent ?? 'no commit'}, found ${head ?? 'no commit'})`);
      const now = Math.floor(Date.now() / 1000);
      const ident = `${sanitizeIdent(author.name)} <${sanitizeIdent(author.email)}> ${now} +0000`;
      const chunks: Buffer[] = [];
      const data = (text: string): void => {
        const bytes = Buffer.from(text, 'utf8');
        chunks.push(Buffer.from(`data ${bytes.length}\n`), bytes, Buffer.from('\n'));
      };
      chunks.push(Buffer.from(`commit refs/heads/${MANAGED_BRANCH}\nauthor ${ident}\ncommitter Agentyard <agentyard@localhost> ${now} +0000\n`));
      data(message.endsWith('\n') ? message : `${message}\n`);
      if (parent) chunks.push(Buffer.from(`from ${parent}\n`));
      chunks.push(Buffer.from('deleteall\n'));
      for (const file of files) {
        chunks.push(Buffer.from(`M 100644 inline ${importPath(file.path)}\n`));
        data(file.content);
      }
      chunks.push(Buffer.from('\n'));
      await fastImport(this.#dir, Buffer.concat(chunks));
      const sha = await this.head();
      if (!sha || sha === parent) throw new Error('git fast-import did not advance the branch');
      return sha;
    });
  }
}

function fastImport(gitDir: string, stream: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['fast-import', '--quiet', '--done'], { cwd: gitDir, env: { ...inheritedEnv(), ...BASE_GIT_ENV }, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited with ${code}: ${stderr.trim().split('\n')[0]}`))));
    child.stdin.end(Buffer.concat([stream, Buffer.from('done\n')]));
  });
}
