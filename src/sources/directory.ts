import { createHash } from 'node:crypto';
import { lstat, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { watch } from 'chokidar';
import type { FactoryFileInput } from '../definitions/load.ts';
import { TOP_DIRECTORIES } from '../definitions/load.ts';
import { DEFAULT_SOURCE_LIMITS, TreeBudget, isFactoryPath } from './limits.ts';
import type { SourceLimits } from './limits.ts';
import type { SourceTree } from './git-exec.ts';
import { SourceError } from './types.ts';
import type { Source, SourceSnapshot } from './types.ts';

/** Saves usually come as several events (truncate, write, rename); one apply follows the last of them. */
export const DIRECTORY_DEBOUNCE_MS = 300;

/** A content digest: the same files give the same revision, so an unchanged save applies nothing. */
export function treeDigest(files: readonly FactoryFileInput[]): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    hash
      .update(file.path)
      .update('\0')
      .update(file.symlink ? 'l' : 'f')
      .update('\0')
      .update(file.content)
      .update('\0');
  }
  return hash.digest('hex');
}

/**
 * The factory files under `dir` within `limits`: a breadth-first walk of the root and the resource directories
 * that counts entries (sizes from `lstat`) and stops at the first excess; content is read only when all fit.
 */
export async function readDirectoryTree(dir: string, limits: SourceLimits): Promise<SourceTree> {
  const stats = await lstat(dir);
  if (!stats.isDirectory()) throw Object.assign(new Error(`${dir} is not a directory`), { code: 'ENOTDIR' });
  const budget = new TreeBudget(limits);
  const wanted: string[] = [];
  const links: string[] = [];
  const queue: string[] = [''];
  walk: while (queue.length > 0) {
    const relative = queue.shift()!;
    const entries = await readdir(relative ? path.join(dir, relative) : dir, { withFileTypes: true });
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const rel = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!relative && !TOP_DIRECTORIES.has(entry.name)) continue;
        if (!budget.addDirectory(rel)) break walk;
        queue.push(rel);
      } else if (entry.isSymbolicLink()) {
        if (!isFactoryPath(rel, true)) continue;
        if (!budget.add(rel, 0)) break walk;
        links.push(rel);
      } else if (entry.isFile() && isFactoryPath(rel)) {
        if (!budget.add(rel, (await lstat(path.join(dir, rel))).size)) break walk;
        wanted.push(rel);
      }
    }
  }
  const refused = budget.refusals();
  if (refused.length > 0) return { files: [], refused };
  const files: FactoryFileInput[] = links.map((p) => ({ path: p, content: '', symlink: true }));
  for (const rel of wanted) files.push({ path: rel, content: await readFile(path.join(dir, rel), 'utf8') });
  return { files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)), refused: [] };
}

/** A factory tree in a local directory: the development loop of `agentyard serve --factory ./dir`. */
export class DirectorySource implements Source {
  readonly #dir: string;
  readonly #limits: SourceLimits;

  constructor(dir: string, limits: SourceLimits = DEFAULT_SOURCE_LIMITS) {
    this.#dir = path.resolve(dir);
    this.#limits = limits;
  }

  describe(): string {
    return `directory ${this.#dir}`;
  }

  async fetch(): Promise<SourceSnapshot> {
    let tree: SourceTree;
    try {
      tree = await readDirectoryTree(this.#dir, this.#limits);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // One answer for missing, unreadable and not-a-directory: whether a path exists is nobody's business.
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES' || code === 'EPERM')
        throw new SourceError('terminal', 'PathNotFound', `read ${this.describe()}: no readable directory`);
      // A file vanishing between listing and reading (an editor's rename) is worth another look.
      throw new SourceError('transient', 'ReadFailed', `read ${this.describe()}: ${(err as Error).message}`);
    }
    return {
      revision: `directory@sha256:${treeDigest(
        tree.refused.length > 0 ? tree.refused.map((d) => ({ path: d.file, content: d.message })) : tree.files,
      )}`,
      files: tree.files,
      commit: { sha: null, author: null, message: null, time: null },
      ...(tree.refused.length > 0 ? { refused: tree.refused } : {}),
    };
  }

  /** Calls `onChange` once per burst of file events, `debounceMs` after the last one. Resolves to a stop function. */
  async watch(onChange: () => void, debounceMs = DIRECTORY_DEBOUNCE_MS): Promise<() => Promise<void>> {
    let timer: NodeJS.Timeout | undefined;
    // Only what the loader reads is watched, and no more paths than a tree may hold.
    const cap = this.#limits.files * 2;
    const seen = new Set<string>();
    const watcher = watch(this.#dir, {
      ignoreInitial: true,
      ignored: (file: string) => {
        const rel = path.relative(this.#dir, file);
        if (rel === '') return false;
        const segments = rel.split(path.sep);
        if (segments.some((segment) => segment.startsWith('.') || segment === 'node_modules')) return true;
        if (segments.length === 1 && !TOP_DIRECTORIES.has(rel) && !/^factory\.ya?ml$/.test(rel)) return true;
        if (seen.has(rel)) return false;
        if (seen.size >= cap) return true;
        seen.add(rel);
        return false;
      },
    });
    watcher.on('all', () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = undefined;
        onChange();
      }, debounceMs);
    });
    watcher.on('error', () => {
      // The next event or sync reads the directory again; a watcher error changes nothing live.
    });
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    return async () => {
      if (timer) clearTimeout(timer);
      await watcher.close();
    };
  }
}
