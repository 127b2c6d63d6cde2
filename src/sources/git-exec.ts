import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import { TOP_DIRECTORIES } from '../definitions/load.ts';
import type { FactoryFileInput } from '../definitions/load.ts';
import { execCommand, succeeded } from '../kernel/run-command.ts';
import { blobsOnThread, gitError, gitOnThread, listOnThread } from './git-thread.ts';
import type { GitCommand, TreeEntry } from './git-worker.ts';
import type { SourceLimits } from './limits.ts';

/** Git must never wait for a terminal prompt or a pager in a server process. */
export const BASE_GIT_ENV: Record<string, string> = {
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  LC_ALL: 'C',
};

/** Per-command timeout: a hung network fetch is killed rather than stalling the factory's loop. */
const BLOCK_TIMEOUT_MS = 120_000;

/** A bare repository in `dir`, created (`git init --bare` with `initArgs`, on the git thread) when it does not exist yet. */
export async function initBareRepository(dir: string, initArgs: readonly string[] = []): Promise<void> {
  await mkdir(dir, { recursive: true });
  const initialised = await stat(path.join(dir, 'HEAD')).then(
    () => true,
    () => false,
  );
  if (!initialised) await git(dir, ['init', '--bare', '--quiet', ...initArgs]);
}

/** Variables git may inherit: paths, locale and proxies. Editors, pagers and GIT_* settings of the server's shell are not passed. */
const INHERITED =
  /^(PATH|HOME|TMPDIR|TEMP|TMP|USER|LOGNAME|LANG|SYSTEMROOT|(https?|no|all)_proxy|(HTTPS?|NO|ALL)_PROXY|SSL_CERT_FILE|SSL_CERT_DIR)$/;

export function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && INHERITED.test(key)) env[key] = value;
  }
  return env;
}

export type { TreeEntry } from './git-worker.ts';

/** A git command in `dir` with the environment git may have, for the git thread. */
export function gitCommand(
  dir: string,
  args: string[],
  extraEnv: Record<string, string> = {},
  input?: string,
): GitCommand {
  return {
    args,
    cwd: dir,
    env: { ...inheritedEnv(), ...BASE_GIT_ENV, ...extraEnv },
    blockTimeoutMs: BLOCK_TIMEOUT_MS,
    ...(input === undefined ? {} : { input }),
  };
}

/** `git <args>` in `dir`, spawned on the git thread; its standard output as text. */
export async function git(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  return (await gitOnThread(gitCommand(dir, args, extraEnv))).toString('utf8');
}

/**
 * `git <args>` in `dir` started from this thread's spawner (src/kernel/spawner.ts), killed when `signal` aborts;
 * its standard output as text. For a caller that must be able to stop git, which the git thread cannot offer.
 */
export async function gitStoppable(dir: string, args: string[], signal?: AbortSignal): Promise<string> {
  const outcome = await execCommand({ command: 'git', ...gitCommand(dir, args), ...(signal ? { signal } : {}) });
  if (!succeeded(outcome)) throw gitError(outcome, args);
  return outcome.stdout.toString('utf8');
}

/** `git ls-tree -r -z` output. */
export function parseLsTree(output: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const record of output.split('\0')) {
    if (!record) continue;
    const tab = record.indexOf('\t');
    const [mode, type, object] = record.slice(0, tab).split(' ');
    entries.push({ mode: mode!, type: type!, object: object!, path: record.slice(tab + 1) });
  }
  return entries;
}

/** Reads many blobs with one `git cat-file --batch` process (one process per file would be slow for big trees). */
export async function readBlobs(gitDir: string, objects: readonly string[]): Promise<Map<string, string>> {
  if (objects.length === 0) return new Map();
  return blobsOnThread(gitCommand(gitDir, ['cat-file', '--batch'], {}, `${objects.join('\n')}\n`));
}

/** Files git can hold that a factory tree may use: the loader reads only YAML and Markdown. */
const READ_EXTENSIONS = /\.(ya?ml|md)$/;

/**
 * The files of `<treeish>` (a commit, or `commit:sub/path`) as loader inputs. Symbolic links are passed as
 * such (the loader reports them); submodules are skipped, and so are files the loader does not read unless
 * `everyFile` (a managed repository's record keeps whole trees).
 */
export async function readTree(
  gitDir: string,
  treeish: string,
  options: { everyFile?: boolean } = {},
): Promise<FactoryFileInput[]> {
  const entries = parseLsTree(await git(gitDir, ['ls-tree', '-r', '-z', '--full-tree', treeish]));
  const files: FactoryFileInput[] = [];
  const wanted: TreeEntry[] = [];
  for (const entry of entries) {
    if (entry.type !== 'blob') continue;
    if (entry.mode === '120000') files.push({ path: entry.path, content: '', symlink: true });
    else if (options.everyFile || READ_EXTENSIONS.test(entry.path)) wanted.push(entry);
  }
  const blobs = await readBlobs(gitDir, [...new Set(wanted.map((e) => e.object))]);
  for (const entry of wanted) files.push({ path: entry.path, content: blobs.get(entry.object) ?? '' });
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export interface CommitInfo {
  sha: string;
  author: string;
  message: string;
  time: Date;
}

export async function readCommit(gitDir: string, sha: string): Promise<CommitInfo> {
  const out = await git(gitDir, ['show', '-s', '--format=%H%x00%an <%ae>%x00%aI%x00%B', sha]);
  const [full, author, time, ...message] = out.split('\0');
  return { sha: full!.trim(), author: author!, time: new Date(time!), message: message.join('\0').trim() };
}

export interface SourceTree {
  files: FactoryFileInput[];
  /** `FF_LIMIT_EXCEEDED` diagnostics: when any, no content was read and `files` is empty. */
  refused: Diagnostic[];
}

/** The factory files of `<treeish>` within `limits`; over them, the refusals and no content. */
export async function readSourceTree(gitDir: string, treeish: string, limits: SourceLimits): Promise<SourceTree> {
  const { entries, refused } = await listOnThread(
    gitCommand(gitDir, [
      'ls-tree',
      '-r',
      '-l',
      '-z',
      '--full-tree',
      treeish,
      '--',
      'factory.yaml',
      'factory.yml',
      ...TOP_DIRECTORIES,
    ]),
    limits,
  );
  if (refused.length > 0) return { files: [], refused };
  const files: FactoryFileInput[] = [];
  const wanted = entries.filter((e) => {
    if (e.mode !== '120000') return true;
    files.push({ path: e.path, content: '', symlink: true });
    return false;
  });
  const blobs = await readBlobs(gitDir, [...new Set(wanted.map((e) => e.object))]);
  for (const entry of wanted) files.push({ path: entry.path, content: blobs.get(entry.object) ?? '' });
  return { files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)), refused: [] };
}
