import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const openRoots = new Set<string>();

/**
 * Removes the remotes a test file did not close. Called after every test file by `test/support/per-file.ts`:
 * a hook registered here would run only after the first file of a process that does not isolate its files.
 */
export function removeOpenGitRemotes(): void {
  for (const root of openRoots) rmSync(root, { recursive: true, force: true });
  openRoots.clear();
}

/** A real remote for source tests: a bare repository and a working clone that commits and pushes to it. */
export interface GitRemote {
  /** The bare repository (use as the source URL, or `file://` + it). */
  bare: string;
  work: string;
  write(files: Record<string, string>): Promise<void>;
  remove(...paths: string[]): Promise<void>;
  /** Commits everything in the working clone and pushes `branch`; answers the commit SHA. */
  commitAndPush(message: string, options?: { branch?: string; author?: string }): Promise<string>;
  /** Runs a shell script of git commands in the working clone (arguments as `$1`, `$2`…); answers its output. */
  shell(script: string, ...args: string[]): Promise<string>;
  close(): void;
}

/**
 * Runs a short shell script of git commands in `cwd`, arguments passed as `$1`, `$2`…: one fork of the test's
 * process per script instead of one per git command. A test process holding PGlite threads is large, and
 * forking it costs tens of milliseconds of page-table copying each time (git's own forks from the small shell
 * are cheap).
 */
async function git(cwd: string, script: string, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('/bin/sh', ['-ec', script, 'git-fixture', ...args], {
    cwd,
    maxBuffer: 16 << 20,
  });
  return stdout;
}

export async function createGitRemote(): Promise<GitRemote> {
  const root = mkdtempSync(path.join(tmpdir(), 'agentyard-git-'));
  openRoots.add(root);
  const bare = path.join(root, 'remote.git');
  const work = path.join(root, 'work');
  await mkdir(bare);
  await mkdir(work);
  await git(
    root,
    `git init --bare --quiet --initial-branch=main "$1"
     cd "$2"
     git init --quiet --initial-branch=main
     git config user.name 'Test Author'
     git config user.email author@example.com
     git config commit.gpgsign false
     git remote add origin "$1"`,
    bare,
    work,
  );
  return {
    bare,
    work,
    async write(files) {
      for (const [file, content] of Object.entries(files)) {
        const full = path.join(work, file);
        await mkdir(path.dirname(full), { recursive: true });
        await writeFile(full, content);
      }
    },
    async remove(...paths) {
      for (const p of paths) await rm(path.join(work, p), { recursive: true, force: true });
    },
    async commitAndPush(message, options = {}) {
      const branch = options.branch ?? 'main';
      const sha = await git(
        work,
        `current=$(git rev-parse --abbrev-ref HEAD 2>/dev/null) || current=main
         [ "$current" = "$1" ] || git checkout --quiet -B "$1"
         git add -A
         if [ -n "$3" ]; then git commit --quiet --allow-empty -m "$2" --author "$3"
         else git commit --quiet --allow-empty -m "$2"; fi
         git push --quiet --force origin "HEAD:refs/heads/$1"
         git rev-parse HEAD
         if [ "$current" != "$1" ] && [ "$current" != HEAD ]; then git checkout --quiet "$current"; fi`,
        branch,
        message,
        options.author ?? '',
      );
      return sha.trim();
    },
    shell: (script, ...args) => git(work, script, ...args),
    close() {
      openRoots.delete(root);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
