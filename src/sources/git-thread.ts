import { Piscina } from 'piscina';
import { serveSpawnerToThreads } from '../kernel/spawner-link.ts';
import type { SourceLimits } from './limits.ts';
import type { GitCommand, GitOutcome, GitTask, ListedTree } from './git-worker.ts';

/** Git processes one thread has running at once; they mostly wait on I/O. */
const CONCURRENT_COMMANDS = 16;

let pool: Piscina<GitTask, unknown> | undefined;

/**
 * The thread that runs git for sources and managed repositories and parses its output, off the event loop that
 * serves webhooks. Its git processes start from the main thread's spawner process, whose orders the main thread
 * relays, so that nothing forks the server. Idle, it ends after a minute and never keeps the process alive.
 */
function gitThread(): Piscina<GitTask, unknown> {
  serveSpawnerToThreads();
  pool ??= new Piscina({
    filename: new URL('./git-worker.ts', import.meta.url).href,
    minThreads: 0,
    maxThreads: 1,
    concurrentTasksPerWorker: CONCURRENT_COMMANDS,
    idleTimeout: 60_000,
    maxQueue: Number.POSITIVE_INFINITY,
  });
  return pool;
}

/** A failed git command's error: its message is git's standard error, which callers classify. */
export function gitError(
  outcome: { code: number | null; stderr: string; failure?: string },
  args: readonly string[],
): Error {
  return new Error(outcome.failure ?? (outcome.stderr.trim() || `git ${args[0]} exited with ${outcome.code}`));
}

/** Runs `git <command.args>` on the git thread; answers its standard output, or rejects with its standard error. */
export async function gitOnThread(command: GitCommand): Promise<Buffer> {
  const outcome = (await gitThread().run({ kind: 'run', command })) as GitOutcome;
  if (outcome.failure || outcome.code !== 0) throw gitError(outcome, command.args);
  return Buffer.from(outcome.stdout.buffer, outcome.stdout.byteOffset, outcome.stdout.byteLength);
}

/** The factory entries of an `ls-tree` command counted against `limits` on the git thread. */
export async function listOnThread(command: GitCommand, limits: SourceLimits): Promise<ListedTree> {
  const listed = (await gitThread().run({ kind: 'list', command, limits })) as ListedTree;
  if (listed.failure) throw new Error(listed.failure);
  return listed;
}

/** A `cat-file --batch` command's blobs, decoded as UTF-8 on the git thread. */
export async function blobsOnThread(command: GitCommand): Promise<Map<string, string>> {
  const read = (await gitThread().run({ kind: 'blobs', command })) as {
    contents: [string, string][];
    failure?: string;
  };
  if (read.failure) throw new Error(read.failure);
  return new Map(read.contents);
}
