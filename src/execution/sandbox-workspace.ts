/**
 * The server's side of a sandbox whose workspace is a size-limited tmpfs (sandbox/workspace-wrapper.ts): it
 * finds the sandbox's init (its root shows the tmpfs at the workspace's path), watches the tmpfs's free space
 * (full: the agent reached the workspace limit, which the kernel enforced), and when the wrapper says the
 * command has ended (every other process of the sandbox killed), copies the workspace back to the host through
 * `/proc/<init>/root` with workspace-copy.ts, then swaps it in for the host's workspace. Until then the host's
 * workspace keeps what the agent started with: a server killed mid-run leaves that.
 */
import { readFileSync } from 'node:fs';
import { readFile, rm, mkdir, rename, statfs } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { descendantsOf } from './agent-process.ts';
import { sizeText } from './limits.ts';
import { streamLines } from './stream-lines.ts';
import { parseWrapperLine } from './sandbox/workspace-wrapper.ts';
import { copyTreeOut } from './workspace-copy.ts';
import type { CopyResult } from './workspace-copy.ts';

/** How often the tmpfs's free space is read (one statfs). */
const WATCH_MS = 250;

/** What the copy-out came to, for the run's events and outcome. */
export interface WorkspaceReturn {
  /** The wrapper could not copy the host's workspace in (it did not fit): the agent did not start. */
  copyInFailed: boolean;
  /** The tmpfs was found full (free space under `fullBelow`) at some point: the limit was reached. */
  full: boolean;
  /** What came back, when the copy-out happened. */
  copied?: CopyResult;
  /** Why nothing came back (the sandbox ended before its wrapper said so, or the copy failed). */
  lost?: string;
}

/** The host pids of a sandbox's init and of its first process (the wrapper): NSpid's innermost 1 and 2. */
export async function sandboxCore(tree: readonly number[]): Promise<{ init?: number; wrapper?: number }> {
  const found: { init?: number; wrapper?: number } = {};
  for (const pid of tree) {
    try {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const ns = /^NSpid:\s+(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
      if (!ns || ns.length < 2) continue;
      if (ns.at(-1) === '1') found.init ??= pid;
      if (ns.at(-1) === '2') found.wrapper ??= pid;
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/**
 * The sandbox's init when `launcher` is bubblewrap (or a shell that exec'd it): its only child, read at once
 * from /proc/<pid>/task/<pid>/children (CONFIG_PROC_CHILDREN); undefined when that cannot tell.
 */
function initOf(launcher: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${launcher}/task/${launcher}/children`, 'utf8').trim().split(/\s+/);
    if (children.length !== 1 || !/^\d+$/.test(children[0]!)) return undefined;
    const status = readFileSync(`/proc/${children[0]}/status`, 'utf8');
    const ns = /^NSpid:\s+(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    return ns && ns.length >= 2 && ns.at(-1) === '1' ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

export class SandboxWorkspace {
  readonly #dir: string;
  readonly #bytes: number;
  readonly #fullBelow: number;
  readonly #onFull: () => void;
  #launcher: number | undefined;
  #init: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #ended = false;
  #started = false;
  readonly result: WorkspaceReturn = { copyInFailed: false, full: false };
  /** Settles once the wrapper's last message has been answered (or the sandbox is gone). */
  readonly settled: Promise<void>;
  #settle!: () => void;
  #copying: Promise<void> | undefined;
  /** The copy-out is over (done or failed): the sandbox is ending, the host's workspace is the one to read. */
  #back = false;

  constructor(dir: string, bytes: number, onFull: () => void) {
    this.#dir = dir;
    this.#bytes = bytes;
    // a write that hit the limit leaves less than a page free; a workspace this close to it is at it
    this.#fullBelow = Math.min(64 * 1024, Math.floor(bytes / 100));
    this.#onFull = onFull;
    this.settled = new Promise((resolve) => {
      this.#settle = resolve;
    });
  }

  /** Starts listening to the wrapper of the sandbox launched as `pid`, and watching the tmpfs. */
  attach(pid: number | undefined, control: Duplex | undefined): void {
    this.#launcher = pid;
    if (pid === undefined || !control) {
      this.result.lost = 'the sandbox did not start';
      this.#settle();
      return;
    }
    const lines = streamLines(control, (line) => this.#message(line, control));
    lines.on('close', () => {
      this.#stopWatching();
      // the copy-out (when it began) settles on its own
      if (!this.#copying) {
        this.#back = true;
        if (this.#started && !this.#ended)
          this.result.lost = 'the sandbox ended before its workspace could be copied back';
        this.#settle();
      }
    });
    this.#watch();
  }

  /**
   * The workspace as the agent sees it, for reading an artifact it reports while it runs (through its sandbox's
   * root; the read follows no link); the host's workspace before and after.
   */
  view(): string {
    if (this.#back) return this.#dir;
    this.#init ??= this.#launcher === undefined ? undefined : initOf(this.#launcher);
    return this.#init !== undefined ? `/proc/${this.#init}/root${this.#dir}` : this.#dir;
  }

  /** Which processes of a stopped agent's tree are left alive for the copy-out: the sandbox's init and wrapper. */
  async spared(tree: number[]): Promise<Set<number>> {
    const core = await sandboxCore(tree);
    return new Set([core.init, core.wrapper].filter((p): p is number => p !== undefined));
  }

  async #findInit(): Promise<number | undefined> {
    if (this.#init === undefined && this.#launcher !== undefined)
      this.#init = initOf(this.#launcher) ?? (await sandboxCore(await descendantsOf(this.#launcher))).init;
    return this.#init;
  }

  #watch(): void {
    this.#timer = setTimeout(() => {
      void this.#check().finally(() => {
        if (this.#timer) this.#watch();
      });
    }, WATCH_MS);
    this.#timer.unref();
  }

  #stopWatching(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #check(): Promise<void> {
    if (this.#ended || this.result.full) return;
    const init = await this.#findInit();
    if (init === undefined) return;
    try {
      const fs = await statfs(`/proc/${init}/root${this.#dir}`);
      if (fs.bavail * fs.bsize < this.#fullBelow) this.#reachedLimit();
    } catch {
      // the sandbox is ending
    }
  }

  #reachedLimit(): void {
    if (this.result.full) return;
    this.result.full = true;
    this.#onFull();
  }

  #message(line: string, control: Duplex): void {
    const msg = parseWrapperLine(line);
    if (!msg || this.#ended) return;
    if (msg.kind === 'started') {
      this.#started = true;
      return;
    }
    this.#ended = true;
    this.#stopWatching();
    if (msg.kind === 'copy-in-failed') {
      this.result.copyInFailed = true;
      this.#back = true;
      control.write('done\n');
      this.#settle();
      return;
    }
    if (msg.freeBytes !== undefined && msg.freeBytes < this.#fullBelow) this.#reachedLimit();
    this.#copying = this.#copyOut().finally(() => {
      this.#back = true;
      control.write('done\n');
      this.#settle();
    });
  }

  /** Copies the sandbox's workspace into a new directory beside the host's, then swaps the two. */
  async #copyOut(): Promise<void> {
    const init = await this.#findInit();
    if (init === undefined) {
      this.result.lost = "the sandbox's workspace could not be found";
      return;
    }
    const staging = `${this.#dir}.copy-out`;
    const replaced = `${this.#dir}.replaced`;
    try {
      await rm(staging, { recursive: true, force: true });
      await mkdir(staging, { mode: 0o700 });
      this.result.copied = await copyTreeOut(`/proc/${init}/root${this.#dir}`, staging, this.#bytes);
      await rm(replaced, { recursive: true, force: true });
      await rename(this.#dir, replaced);
      await rename(staging, this.#dir);
      await rm(replaced, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      this.result.lost = `the workspace could not be copied back: ${(err as Error).message}`;
      await rm(staging, { recursive: true, force: true }).catch(() => {});
    }
  }

  /** The wrapper said it started the agent's command (the workspace was copied in). */
  get agentStarted(): boolean {
    return this.#started;
  }

  /** The wrapper said the agent ended: the copy-out is under way or done. */
  get copyStarted(): boolean {
    return this.#ended;
  }

  /** What the run should be told about the copy-out (an `error` event's data), if anything. */
  report(): { message: string; fatal: boolean; error_code: string } | undefined {
    if (this.result.lost)
      return {
        message: `${this.result.lost}; the workspace keeps what it held when the agent started`,
        fatal: false,
        error_code: 'workspace_not_copied',
      };
    const copied = this.result.copied;
    if (copied && copied.leftOut.count > 0)
      return {
        message: `${copied.leftOut.count} entr${copied.leftOut.count === 1 ? 'y' : 'ies'} of the workspace ${copied.overBudget ? `did not fit its limit of ${sizeText(this.#bytes)} on the host or ` : ''}could not be copied back: ${copied.leftOut.examples.join(', ')}`,
        fatal: false,
        error_code: 'workspace_entries_left_out',
      };
    return undefined;
  }
}
