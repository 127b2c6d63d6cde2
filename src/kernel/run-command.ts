/**
 * A short command run to its end through the spawner process (spawner.ts), as `execFile` would run it but without
 * forking the server: git for sources and managed repositories, the sandbox's probes, a container's removal.
 */
import type { Socket } from 'node:net';
import { spawnProcess } from './spawner.ts';
import type { StartedProcess } from './spawner.ts';

export interface CommandRequest {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to the command's standard input, which is closed then (none: closed at once). */
  input?: string;
  /** A command without output for this long is killed (SIGKILL). */
  blockTimeoutMs: number;
  /** Kills the command (SIGKILL) when aborted. */
  signal?: AbortSignal;
}

/** Standard error kept of a command: its messages are read from the start, and a flood of it costs no more. */
export const MAX_STDERR = 64 * 1024;

export interface CommandOutcome {
  /** The exit code: null when killed by a signal; 0 when `onStdout` stopped it. */
  code: number | null;
  /** Its first MAX_STDERR bytes or so (decoded as UTF-8). */
  stderr: string;
  /** Why the command could not run or was killed (timed out, aborted), when it was. */
  failure?: string;
  /** The start's error code when it could not run (ENOENT: no such executable; EACCES). */
  startError?: string;
}

/** The command's name and first word that is not an option, for messages: `git fetch`. */
function shortName(request: CommandRequest): string {
  const first = request.args.find((a) => !a.startsWith('-') && !a.includes('='));
  return first === undefined ? request.command : `${request.command} ${first}`;
}

/** Runs the command to its end; `onStdout` answers false to stop reading and end it (SIGTERM). */
export async function runCommand(
  request: CommandRequest,
  onStdout: (chunk: Buffer) => boolean,
): Promise<CommandOutcome> {
  if (request.signal?.aborted) return { code: null, stderr: '', failure: `${shortName(request)} was stopped` };
  let started: StartedProcess;
  try {
    started = await spawnProcess({
      command: request.command,
      args: request.args,
      cwd: request.cwd,
      env: request.env,
      streams: 3,
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { code: null, stderr: '', failure: (err as Error).message, ...(code ? { startError: code } : {}) };
  }
  const [stdin, stdout, stderr] = started.streams as [Socket, Socket, Socket];
  return new Promise((resolve) => {
    let errors = '';
    let failure: string | undefined;
    let stopped = false;
    const kill = (signal: NodeJS.Signals): void => {
      try {
        process.kill(started.pid, signal);
      } catch {
        // exited meanwhile
      }
    };
    const fail = (why: string): void => {
      failure ??= why;
      kill('SIGKILL');
    };
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => fail(`${shortName(request)} timed out: no output for ${request.blockTimeoutMs / 1000} s`),
        request.blockTimeoutMs,
      );
    };
    const onAbort = () => fail(`${shortName(request)} was stopped`);
    request.signal?.addEventListener('abort', onAbort, { once: true });
    arm();
    stdout.on('data', (chunk: Buffer) => {
      arm();
      if (stopped) return;
      if (!onStdout(chunk)) {
        stopped = true;
        kill('SIGTERM');
      }
    });
    stderr.on('data', (chunk: Buffer) => {
      arm();
      if (errors.length < MAX_STDERR) errors += chunk.toString('utf8', 0, MAX_STDERR - errors.length);
    });
    void started.exited.then(() => {
      // A killed command's own children (an alias, a credential helper) may hold its streams open: stop waiting.
      if (failure !== undefined || stopped) {
        stdout.destroy();
        stderr.destroy();
      }
    });
    void started.closed.then((exit) => {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      resolve({ code: stopped ? 0 : exit.code, stderr: errors, ...(failure ? { failure } : {}) });
    });
    stdin.end(request.input ?? '');
  });
}

/** Runs the command to its end and answers its whole standard output with the outcome. */
export async function execCommand(request: CommandRequest): Promise<CommandOutcome & { stdout: Buffer }> {
  const chunks: Buffer[] = [];
  const outcome = await runCommand(request, (chunk) => chunks.push(chunk) > 0);
  return { ...outcome, stdout: Buffer.concat(chunks) };
}

/** An environment for a command: `env` without its unset entries. */
export function commandEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

/** What went wrong, in a line: the first line of standard error, or how the command ended. */
export function failureDetail(outcome: CommandOutcome): string {
  const line = outcome.stderr
    .split('\n')
    .map((l) => l.trim())
    .find(Boolean);
  return line ?? outcome.failure ?? `exited with ${outcome.code ?? 'a signal'}`;
}

/** Whether the command ran and exited 0. */
export function succeeded(outcome: CommandOutcome): boolean {
  return outcome.failure === undefined && outcome.code === 0;
}
