import { createHash } from 'node:crypto';
import path from 'node:path';
import { watch } from 'chokidar';
import { readFactoryDir } from '../definitions/load.ts';
import type { FactoryFileInput } from '../definitions/load.ts';
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

/** A factory tree in a local directory: the development loop of `agentyard serve --factory ./dir`. */
export class DirectorySource implements Source {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = path.resolve(dir);
  }

  describe(): string {
    return `directory ${this.#dir}`;
  }

  async fetch(): Promise<SourceSnapshot> {
    let files: FactoryFileInput[];
    try {
      files = await readFactoryDir(this.#dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR')
        throw new SourceError('terminal', 'PathNotFound', `read ${this.describe()}: no such directory`);
      if (code === 'EACCES')
        throw new SourceError('terminal', 'PermissionDenied', `read ${this.describe()}: permission denied`);
      // A file vanishing between listing and reading (an editor's rename) is worth another look.
      throw new SourceError('transient', 'ReadFailed', `read ${this.describe()}: ${(err as Error).message}`);
    }
    return {
      revision: `directory@sha256:${treeDigest(files)}`,
      files,
      commit: { sha: null, author: null, message: null, time: null },
    };
  }

  /** Calls `onChange` once per burst of file events, `debounceMs` after the last one. Resolves to a stop function. */
  async watch(onChange: () => void, debounceMs = DIRECTORY_DEBOUNCE_MS): Promise<() => Promise<void>> {
    let timer: NodeJS.Timeout | undefined;
    const watcher = watch(this.#dir, {
      ignoreInitial: true,
      ignored: (file: string) => {
        const rel = path.relative(this.#dir, file);
        return (
          rel !== '' && rel.split(path.sep).some((segment) => segment.startsWith('.') || segment === 'node_modules')
        );
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
