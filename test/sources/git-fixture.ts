import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simpleGit } from 'simple-git';
import type { SimpleGit } from 'simple-git';
import { afterAll } from 'vitest';

// Remotes a test file did not close are removed when the file's tests are done.
const openRoots = new Set<string>();
afterAll(() => {
  for (const root of openRoots) rmSync(root, { recursive: true, force: true });
  openRoots.clear();
});

/** A real remote for source tests: a bare repository and a working clone that commits and pushes to it. */
export interface GitRemote {
  /** The bare repository (use as the source URL, or `file://` + it). */
  bare: string;
  work: string;
  git: SimpleGit;
  write(files: Record<string, string>): Promise<void>;
  remove(...paths: string[]): Promise<void>;
  /** Commits everything in the working clone and pushes `branch`; answers the commit SHA. */
  commitAndPush(message: string, options?: { branch?: string; author?: string }): Promise<string>;
  close(): void;
}

export async function createGitRemote(): Promise<GitRemote> {
  const root = mkdtempSync(path.join(tmpdir(), 'agentyard-git-'));
  openRoots.add(root);
  const bare = path.join(root, 'remote.git');
  const work = path.join(root, 'work');
  await mkdir(bare);
  await simpleGit(bare).raw(['init', '--bare', '--quiet', '--initial-branch=main']);
  await mkdir(work);
  const git = simpleGit(work);
  await git.raw(['init', '--quiet', '--initial-branch=main']);
  await git.addConfig('user.name', 'Test Author');
  await git.addConfig('user.email', 'author@example.com');
  await git.addConfig('commit.gpgsign', 'false');
  await git.addRemote('origin', bare);
  return {
    bare,
    work,
    git,
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
      const current = (await git.raw(['rev-parse', '--abbrev-ref', 'HEAD']).catch(() => 'main')).trim();
      if (current !== branch) await git.raw(['checkout', '--quiet', '-B', branch]);
      await git.raw(['add', '-A']);
      await git.raw([
        'commit',
        '--quiet',
        '--allow-empty',
        '-m',
        message,
        ...(options.author ? ['--author', options.author] : []),
      ]);
      await git.raw(['push', '--quiet', '--force', 'origin', `HEAD:refs/heads/${branch}`]);
      const sha = (await git.revparse(['HEAD'])).trim();
      if (current !== branch && current !== 'HEAD') await git.raw(['checkout', '--quiet', current]);
      return sha;
    },
    close() {
      openRoots.delete(root);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
