/**
 * Processes (agents, git, commands) started by a small spawner process (spawner-process.ts), reached through
 * spawner-link.ts. Node forks on Linux, and a fork of the server copies its page tables and write-protects its
 * memory: ≈ 40 ms of a paused event loop at 900 MB of RSS, half of it even when the fork is made on another
 * thread (docs/execution.md). A child's standard streams are Unix sockets between this thread's listener, in a
 * private directory, and the child: its output reaches the thread as a pipe of child_process would, not through
 * the spawner.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SpawnOrder, SpawnReply } from './spawn-protocol.ts';
import { spawnerLink } from './spawner-link.ts';
import { SPAWN_ID_LENGTH, STREAM_HEADER_BYTES } from './spawn-protocol.ts';

export interface SpawnRequest {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** 3 (stdin, stdout, stderr) or 4 (and fd 3). */
  streams: 3 | 4;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartedProcess {
  pid: number;
  /**
   * stdin, stdout, stderr and, when asked, fd 3: each the server's end of a socket. Their errors are heard here
   * (a child killed mid-exchange resets its end: what was read counts), and stdin is destroyed when the child
   * exits, as child_process does.
   */
  streams: Socket[];
  /** Resolves when the process has exited. */
  exited: Promise<ProcessExit>;
  /** Resolves when the process has exited and its stdout and stderr have closed, as child_process's `close`. */
  closed: Promise<ProcessExit>;
}

/**
 * Connections that have not said which stream they are yet: more are closed at once. A start's streams say so
 * within microseconds; this bounds what a flood of silent connections holds (each 10 s at most), well above
 * the streams of every agent an executor may start at once.
 */
export const MAX_UNANNOUNCED = 512;
/** A connection that has not said which stream it is by then is closed. */
export const HEADER_TIMEOUT_MS = 10_000;

/** A Unix socket's path holds at most 107 bytes: a long TMPDIR gives way to /tmp. */
function listenerParent(): string {
  const dir = tmpdir();
  return Buffer.byteLength(dir) <= 80 ? dir : '/tmp';
}

interface Pending {
  streams: (Socket | undefined)[];
  /** Each stream's close, heard from the moment it is taken: one with nothing to read may close at once. */
  closes: Promise<void>[];
  pid: number | undefined;
  started: boolean;
  exitedAlready: boolean;
  resolve(started: StartedProcess): void;
  reject(err: Error): void;
  exit(exit: ProcessExit): void;
  exited: Promise<ProcessExit>;
}

class Spawner {
  readonly #link = spawnerLink();
  readonly #server: Server;
  readonly #dir: string;
  readonly #socketPath: string;
  readonly #pending = new Map<string, Pending>();
  readonly #listening: Promise<void>;
  #unannounced = 0;

  constructor() {
    this.#dir = mkdtempSync(path.join(listenerParent(), 'agentyard-spawn-'));
    this.#socketPath = path.join(this.#dir, 's');
    this.#server = createServer((socket) => this.#accept(socket));
    this.#server.unref();
    this.#listening = new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#socketPath, () => resolve());
    });
    process.once('exit', () => rmSync(this.#dir, { recursive: true, force: true }));
  }

  get socketPath(): string {
    return this.#socketPath;
  }

  async spawn(request: SpawnRequest): Promise<StartedProcess> {
    await this.#listening;
    const id = randomBytes(SPAWN_ID_LENGTH / 2).toString('hex');
    let exit!: (e: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((resolve) => (exit = resolve));
    const started = new Promise<StartedProcess>((resolve, reject) => {
      this.#pending.set(id, {
        streams: new Array<Socket | undefined>(request.streams).fill(undefined),
        closes: [],
        pid: undefined,
        started: false,
        exitedAlready: false,
        resolve,
        reject,
        exit,
        exited,
      });
    });
    const order: SpawnOrder = { id, ...request, socketPath: this.#socketPath };
    this.#link.send(order, { reply: (reply) => this.#reply(reply), lost: (cause) => this.#lose(id, cause) });
    return started;
  }

  /** The spawner process is gone: a start not made fails, a child started is no one's to report any more. */
  #lose(id: string, cause: Error): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    if (!pending.started) {
      for (const socket of pending.streams) socket?.destroy();
      pending.reject(cause);
    }
    // its children ended with it (--die-with-parent), or are no longer anyone's to report
    pending.exit({ code: null, signal: 'SIGKILL' });
  }

  #accept(socket: Socket): void {
    socket.on('error', () => {});
    if (this.#unannounced >= MAX_UNANNOUNCED) {
      socket.destroy();
      return;
    }
    this.#unannounced++;
    let announced = false;
    const announce = (): void => {
      if (announced) return;
      announced = true;
      this.#unannounced--;
      clearTimeout(timer);
    };
    const timer = setTimeout(() => socket.destroy(), HEADER_TIMEOUT_MS);
    timer.unref();
    socket.once('close', announce);
    const onReadable = (): void => {
      const header = socket.read(STREAM_HEADER_BYTES) as Buffer | null;
      if (header === null) return;
      socket.off('readable', onReadable);
      announce();
      const text = header.toString('latin1');
      const id = text.slice(0, SPAWN_ID_LENGTH);
      const index = Number(text.slice(SPAWN_ID_LENGTH));
      const pending = this.#pending.get(id);
      if (
        !pending ||
        pending.started ||
        !Number.isInteger(index) ||
        index < 0 ||
        index >= pending.streams.length ||
        pending.streams[index]
      ) {
        socket.destroy();
        return;
      }
      pending.streams[index] = socket;
      pending.closes[index] = new Promise((closed) => socket.once('close', () => closed()));
      // taken: the spawner starts the child once every stream has had this byte
      socket.write('k');
      this.#startIfReady(id, pending);
    };
    socket.on('readable', onReadable);
  }

  #reply(reply: SpawnReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    switch (reply.kind) {
      case 'spawned':
        pending.pid = reply.pid;
        this.#startIfReady(reply.id, pending);
        return;
      case 'failed': {
        this.#pending.delete(reply.id);
        for (const socket of pending.streams) socket?.destroy();
        const err = new Error(reply.message) as NodeJS.ErrnoException;
        if (reply.code !== undefined) err.code = reply.code;
        pending.reject(err);
        pending.exit({ code: null, signal: null });
        return;
      }
      case 'exited':
        pending.exitedAlready = true;
        pending.streams[0]?.destroy();
        pending.exit({ code: reply.code, signal: reply.signal });
        if (pending.started) this.#pending.delete(reply.id);
        return;
    }
  }

  #startIfReady(id: string, pending: Pending): void {
    if (pending.started || pending.pid === undefined || pending.streams.some((s) => s === undefined)) return;
    pending.started = true;
    if (pending.exitedAlready) this.#pending.delete(id);
    const closed = Promise.all([pending.exited, pending.closes[1], pending.closes[2]]).then(([exit]) => exit);
    pending.resolve({ pid: pending.pid, streams: pending.streams as Socket[], exited: pending.exited, closed });
  }
}

let spawner: Spawner | undefined;

/** Test seam, not for use outside tests: the path of the listener the children's streams connect to. */
export function spawnListenerForTesting(): string | undefined {
  return spawner?.socketPath;
}

/**
 * Starts `request.command` in a process group of its own, from the spawner process; rejects as child_process's
 * `error` event would (`code` ENOENT: no such executable).
 */
export function spawnProcess(request: SpawnRequest): Promise<StartedProcess> {
  spawner ??= new Spawner();
  return spawner.spawn(request);
}
