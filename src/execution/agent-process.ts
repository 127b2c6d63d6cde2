/**
 * An agent CLI as a child process in its own process group: its stdout read line by line, its stdin kept
 * open for follow-ups when the harness takes them, and a stop that ends the whole process tree (the group,
 * plus any descendant that left it) with SIGTERM, then SIGKILL after a grace period.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { readFile, readdir } from 'node:fs/promises';
import { spawnProcess } from '../kernel/spawner.ts';
import type { StartedProcess } from '../kernel/spawner.ts';
import { streamLines } from './stream-lines.ts';

export interface AgentProcessOptions {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to stdin at start. */
  input?: string;
  /** Keep stdin open after `input` (live follow-ups); otherwise it is closed. */
  keepStdinOpen: boolean;
  onStdoutLine: (line: string) => void;
  onStderrLine: (line: string) => void;
  /** Bytes read from stdout or stderr, as they arrive (before they make lines: a line may be endless). */
  onOutput?: (bytes: number) => void;
  /**
   * The command is a sandbox launcher (bubblewrap) that dies at SIGTERM without passing it on: SIGTERM goes
   * only to what runs inside it, so the agent may end gracefully; SIGKILL still ends everything.
   */
  launcher?: boolean;
  /**
   * A fourth descriptor (fd 3 in the child): a socket the sandbox's workspace wrapper speaks on (see
   * sandbox-workspace.ts). Read and written through `control`.
   */
  control?: boolean;
}

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The process could not be started (`ENOENT`: no such executable). */
  spawnError?: NodeJS.ErrnoException;
}

/** Longest line read from the agent; longer lines are cut (a CLI printing a huge blob must not exhaust memory). */
const MAX_LINE = 4 * 1024 * 1024;

export class AgentProcess {
  readonly #pid: number | undefined;
  readonly #stdin: Socket | undefined;
  readonly #control: Socket | undefined;
  readonly exited: Promise<AgentExit>;
  #stdinOpen: boolean;
  #stopping: Promise<void> | undefined;
  readonly #launcher: boolean;

  /** Starts the agent from the spawner process (src/kernel/spawner.ts), so that its fork does not pause the event loop. */
  static async start(options: AgentProcessOptions): Promise<AgentProcess> {
    try {
      const started = await spawnProcess({
        command: options.command,
        args: options.args,
        cwd: options.cwd,
        env: options.env,
        streams: options.control ? 4 : 3,
      });
      return new AgentProcess(options, started);
    } catch (err) {
      return new AgentProcess(options, err as NodeJS.ErrnoException);
    }
  }

  private constructor(options: AgentProcessOptions, started: StartedProcess | NodeJS.ErrnoException) {
    this.#launcher = options.launcher === true;
    if (started instanceof Error) {
      this.#pid = undefined;
      this.#stdin = undefined;
      this.#control = undefined;
      this.#stdinOpen = false;
      this.exited = Promise.resolve({ code: null, signal: null, spawnError: started });
      return;
    }
    const [stdin, stdout, stderr, control] = started.streams;
    this.#pid = started.pid;
    this.#stdin = stdin;
    this.#control = control;
    this.#stdinOpen = true;
    const readerDone: Promise<void>[] = [];
    for (const [stream, onLine] of [
      [stdout, options.onStdoutLine],
      [stderr, options.onStderrLine],
    ] as const) {
      if (!stream) continue;
      if (options.onOutput) {
        const onOutput = options.onOutput;
        stream.on('data', (chunk: Buffer) => onOutput(chunk.length));
      }
      const lines = streamLines(stream, (line) => onLine(line.length > MAX_LINE ? line.slice(0, MAX_LINE) : line));
      readerDone.push(new Promise((resolve) => lines.once('close', resolve)));
    }
    stdin?.on('error', () => {
      this.#stdinOpen = false;
    });
    // every line the agent wrote has been handed over once its streams have ended, as at child_process's 'close'
    this.exited = Promise.all([started.exited, ...readerDone]).then(([exit]) => ({
      code: exit.code,
      signal: exit.signal,
    }));
    if (options.input !== undefined) stdin?.write(options.input);
    if (!options.keepStdinOpen) this.closeStdin();
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  /** The control socket (fd 3 in the child), when asked for. */
  get control(): Duplex | undefined {
    return this.#control;
  }

  get stdinOpen(): boolean {
    return this.#stdinOpen && this.#stdin?.writable === true;
  }

  /** Writes to the agent's stdin; false when stdin is closed. */
  write(text: string): boolean {
    if (!this.stdinOpen) return false;
    this.#stdin!.write(text);
    return true;
  }

  closeStdin(): void {
    this.#stdinOpen = false;
    this.#stdin?.end();
  }

  /**
   * Ends the process tree: SIGTERM, then SIGKILL after `graceMs` for whatever still runs. `spare` (a launcher's
   * sandbox whose workspace is still to be copied out) picks processes of the tree that are left alive, with
   * the launcher itself: they are woken (SIGCONT) and end on their own, or at `killAll`.
   */
  stop(graceMs: number, spare?: (tree: number[]) => Promise<Set<number>>): Promise<void> {
    this.#stopping ??= (async () => {
      const pid = this.#pid;
      if (pid === undefined) return;
      // nothing to spare yet (the sandbox not made): everything is stopped, as without `spare`
      const spared = spare ? await spare(await descendantsOf(pid)) : new Set<number>();
      const sparing = spared.size > 0;
      const agents = async () => (await descendantsOf(pid)).filter((p) => !spared.has(p));
      const tree = await agents();
      if (this.#launcher) signalTree(undefined, tree, 'SIGTERM');
      else signalTree(pid, tree, 'SIGTERM');
      signalTree(undefined, [...spared], 'SIGCONT');
      const exited = await Promise.race([this.exited.then(() => true), delay(graceMs).then(() => false)]);
      // descendants outlive their parent when they ignore SIGTERM; the group and the list cover them
      const later = await agents();
      signalTree(sparing ? undefined : pid, [...new Set([...tree, ...later])], 'SIGKILL');
      if (!exited && !sparing) await Promise.race([this.exited, delay(graceMs)]);
    })();
    return this.#stopping;
  }

  /** SIGKILL to the whole tree, launcher included (after `stop` spared part of it). */
  async killAll(): Promise<void> {
    const pid = this.#pid;
    if (pid === undefined) return;
    signalTree(pid, await descendantsOf(pid), 'SIGKILL');
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Signals the process group of `leader` (when given) and each descendant. */
function signalTree(leader: number | undefined, descendants: number[], signal: NodeJS.Signals): void {
  if (leader !== undefined) {
    try {
      process.kill(-leader, signal);
    } catch {
      // the group is gone
    }
  }
  for (const p of descendants) {
    try {
      process.kill(p, signal);
    } catch {
      // gone
    }
  }
}

/** Process ids below `pid` (Linux /proc); empty where /proc is not available. */
export async function descendantsOf(pid: number): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (e) => {
        try {
          const stat = await readFile(`/proc/${e}/stat`, 'utf8');
          // pid (comm) state ppid ...; comm may hold spaces and parentheses
          const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
          const list = children.get(ppid) ?? [];
          list.push(Number(e));
          children.set(ppid, list);
        } catch {
          // exited meanwhile
        }
      }),
  );
  const found: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop()!) ?? []) {
      found.push(child);
      stack.push(child);
    }
  }
  return found;
}
