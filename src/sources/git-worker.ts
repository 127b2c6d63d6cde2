/**
 * The git thread's tasks (see git-thread.ts): every `git` process of a source's fetch is ordered from here, from
 * the main thread's spawner process (src/kernel/spawner-link.ts), its streams connected to this thread, and its
 * output parsed here, off the event loop.
 */
import type { Diagnostic } from '../definitions/diagnostic.ts';
import { TreeBudget, isFactoryPath } from './limits.ts';
import type { SourceLimits } from './limits.ts';
import { execCommand, runCommand } from '../kernel/run-command.ts';

export interface GitCommand {
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to git's standard input, which is closed then (none: standard input is closed at once). */
  input?: string;
  /** A process without output for this long is killed. */
  blockTimeoutMs: number;
}

export interface GitOutcome {
  code: number | null;
  stdout: Uint8Array;
  stderr: string;
  /** Why git could not run or was killed, when it was. */
  failure?: string;
}

export interface TreeEntry {
  mode: string;
  type: string;
  object: string;
  path: string;
}

export interface ListedTree {
  entries: TreeEntry[];
  refused: Diagnostic[];
  failure?: string;
}

export type GitTask =
  | { kind: 'run'; command: GitCommand }
  | { kind: 'list'; command: GitCommand; limits: SourceLimits }
  | { kind: 'blobs'; command: GitCommand };

/** One git process, from the spawner process; `onStdout` answers false to stop reading and end it. */
function runGit(command: GitCommand, onStdout: (chunk: Buffer) => boolean): Promise<Omit<GitOutcome, 'stdout'>> {
  return runCommand({ command: 'git', ...command }, onStdout);
}

async function run(command: GitCommand): Promise<GitOutcome> {
  const { stdout, ...outcome } = await execCommand({ command: 'git', ...command });
  return { ...outcome, stdout: new Uint8Array(stdout) };
}

/**
 * `git ls-tree -r -l -z` of a factory's paths, streamed through the budget: blob sizes come from the tree
 * objects, so a tree over the limits is refused (and the listing stopped) before any blob is read.
 */
async function list(command: GitCommand, limits: SourceLimits): Promise<ListedTree> {
  const budget = new TreeBudget(limits);
  const entries: TreeEntry[] = [];
  let rest = '';
  const outcome = await runGit(command, (chunk) => {
    const records = (rest + chunk.toString('utf8')).split('\0');
    rest = records.pop()!;
    for (const record of records) {
      const tab = record.indexOf('\t');
      const [mode, type, object, size] = record.slice(0, tab).split(/ +/);
      const path = record.slice(tab + 1);
      if (type !== 'blob') continue;
      const symlink = mode === '120000';
      if (!isFactoryPath(path, symlink)) continue;
      if (!budget.add(path, symlink ? 0 : Number(size))) return false;
      entries.push({ mode: mode!, type, object: object!, path });
    }
    return true;
  });
  if (outcome.failure || outcome.code !== 0)
    return {
      entries: [],
      refused: [],
      failure: outcome.failure ?? `git ls-tree exited with ${outcome.code}: ${outcome.stderr.trim()}`,
    };
  return { entries, refused: budget.refusals() };
}

/** `git cat-file --batch` output as object → content (UTF-8, as the loader reads it). */
async function blobs(command: GitCommand): Promise<{ contents: [string, string][]; failure?: string }> {
  const outcome = await run(command);
  if (outcome.failure || outcome.code !== 0)
    return {
      contents: [],
      failure: outcome.failure ?? `git cat-file exited with ${outcome.code}: ${outcome.stderr.trim()}`,
    };
  const buf = Buffer.from(outcome.stdout.buffer, outcome.stdout.byteOffset, outcome.stdout.byteLength);
  const contents: [string, string][] = [];
  let offset = 0;
  while (offset < buf.length) {
    const eol = buf.indexOf(0x0a, offset);
    if (eol < 0) break;
    const header = buf.subarray(offset, eol).toString('utf8').split(' ');
    offset = eol + 1;
    if (header[1] === 'missing' || header.length < 3) continue;
    const size = Number(header[2]);
    contents.push([header[0]!, buf.subarray(offset, offset + size).toString('utf8')]);
    offset += size + 1;
  }
  return { contents };
}

export default function task(t: GitTask): Promise<GitOutcome | ListedTree | { contents: [string, string][] }> {
  if (t.kind === 'list') return list(t.command, t.limits);
  if (t.kind === 'blobs') return blobs(t.command);
  return run(t.command);
}
