import type { SourceLimits } from '../config.ts';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import { TOP_DIRECTORIES } from '../definitions/load.ts';

export type { SourceLimits } from '../config.ts';
export { DEFAULT_SOURCE_LIMITS } from '../config.ts';

/** Most refusals one tree reports; the rest are counted in one more diagnostic. */
export const MAX_STORED_DIAGNOSTICS = 100;

const READ_EXTENSIONS = /\.(ya?ml|md)$/;

/**
 * Is `path` (relative to the factory root) a file the loader reads: `factory.yaml` (or the refused `.yml`) at
 * the root, or a YAML/Markdown file (or any symbolic link) under a resource directory; never hidden.
 */
export function isFactoryPath(path: string, symlink = false): boolean {
  const segments = path.split('/');
  if (segments.some((s) => s.startsWith('.') || s === '')) return false;
  if (segments.length === 1) return /^factory\.ya?ml$/.test(path);
  return TOP_DIRECTORIES.has(segments[0]!) && (symlink || READ_EXTENSIONS.test(path));
}

function refused(file: string, message: string): Diagnostic {
  return { file, line: 1, column: 1, path: '', code: 'FF_LIMIT_EXCEEDED', message, severity: 'error' };
}

function kib(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** Counts a tree's entries against the limits before any content is read. */
export class TreeBudget {
  readonly #limits: SourceLimits;
  readonly #refusals: Diagnostic[] = [];
  #files = 0;
  #bytes = 0;
  #overflow = 0;

  constructor(limits: SourceLimits) {
    this.#limits = limits;
  }

  #refuse(diagnostic: Diagnostic): void {
    if (this.#refusals.length < MAX_STORED_DIAGNOSTICS) this.#refusals.push(diagnostic);
    else this.#overflow++;
  }

  #directories = 0;

  /** Adds one directory of a walk; false once there are more directories than files may be. */
  addDirectory(path: string): boolean {
    this.#directories++;
    if (this.#directories <= this.#limits.files) return true;
    this.#refuse(
      refused(
        path,
        `the tree holds more than ${this.#limits.files} directories (AGENTYARD_SOURCE_MAX_FILES); nothing of it is read`,
      ),
    );
    return false;
  }

  /** Adds one file; false once the file count is exceeded (the caller stops listing then). */
  add(path: string, bytes: number): boolean {
    this.#files++;
    if (this.#files > this.#limits.files) {
      this.#refuse(
        refused(
          path,
          `the tree holds more than ${this.#limits.files} factory files (AGENTYARD_SOURCE_MAX_FILES); nothing of it is read`,
        ),
      );
      return false;
    }
    if (bytes > this.#limits.fileBytes) {
      this.#refuse(
        refused(
          path,
          `the file is ${bytes} bytes; at most ${kib(this.#limits.fileBytes)} (AGENTYARD_SOURCE_MAX_FILE_BYTES)`,
        ),
      );
      return true;
    }
    const before = this.#bytes;
    this.#bytes += bytes;
    if (before <= this.#limits.totalBytes && this.#bytes > this.#limits.totalBytes) {
      this.#refuse(
        refused(
          path,
          `the factory files pass ${kib(this.#limits.totalBytes)} in all here (AGENTYARD_SOURCE_MAX_BYTES)`,
        ),
      );
    }
    return true;
  }

  /** The refusals, at most MAX_STORED_DIAGNOSTICS plus one that counts the rest; empty when within limits. */
  refusals(): Diagnostic[] {
    return capDiagnostics(this.#refusals, this.#overflow);
  }
}

/** The first MAX_STORED_DIAGNOSTICS diagnostics, and one more saying how many were left out. */
export function capDiagnostics(diagnostics: readonly Diagnostic[], alreadyLeftOut = 0): Diagnostic[] {
  const kept = diagnostics.slice(0, MAX_STORED_DIAGNOSTICS);
  const leftOut = diagnostics.length - kept.length + alreadyLeftOut;
  if (leftOut === 0) return kept;
  const last = kept[kept.length - 1];
  return [
    ...kept,
    refused(last?.file ?? 'factory.yaml', `${leftOut} more diagnostic${leftOut === 1 ? '' : 's'} not shown`),
  ];
}
