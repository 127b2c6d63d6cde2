/**
 * Agent processes started from a thread of their own (spawn-worker.ts). Node forks on Linux and the fork copies
 * the server's page tables on the calling thread: ≈ 33 ms of a paused event loop at 900 MB of RSS
 * (docs/execution.md). A child's standard streams are Unix sockets between this listener, in a private directory,
 * and the child: its output reaches the event loop as a pipe of child_process would, not through the thread.
 * The thread lives as long as the process: bubblewrap's `--die-with-parent` follows the thread that forked it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { SpawnOrder, SpawnReply } from './spawn-protocol.ts';
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
  /** stdin, stdout, stderr and, when asked, fd 3: each the server's end of a socket. */
  streams: Socket[];
  /** Resolves when the process has exited. */
  exited: Promise<ProcessExit>;
}

/** Connections that have not said which stream they are yet: more are closed at once. */
const MAX_UNANNOUNCED = 64;
/** A connection that has not said which stream it is by then is closed. */
const HEADER_TIMEOUT_MS = 10_000;

interface Pending {
  streams: (Socket | undefined)[];
  pid: number | undefined;
  started: boolean;
  exitedAlready: boolean;
  resolve(started: StartedProcess): void;
  reject(err: Error): void;
  exit(exit: ProcessExit): void;
  exited: Promise<ProcessExit>;
}

class SpawnThread {
  readonly #worker: Worker;
  readonly #server: Server;
  readonly #dir: string;
  readonly #socketPath: string;
  readonly #pending = new Map<string, Pending>();
  readonly #listening: Promise<void>;
  #unannounced = 0;
  #starting = 0;
  #lost: Error | undefined;

  constructor(onLost: () => void) {
    this.#dir = mkdtempSync(path.join(tmpdir(), 'agentyard-spawn-'));
    this.#socketPath = path.join(this.#dir, 's');
    this.#server = createServer((socket) => this.#accept(socket));
    this.#server.unref();
    this.#listening = new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#socketPath, () => resolve());
    });
    this.#worker = new Worker(new URL('./spawn-worker.ts', import.meta.url));
    this.#worker.on('message', (reply: SpawnReply) => this.#reply(reply));
    const lose = (cause: Error): void => {
      if (this.#lost) return;
      this.#lost = cause;
      onLost();
      for (const pending of this.#pending.values()) {
        if (!pending.started) pending.reject(cause);
        // its children were killed with the thread (--die-with-parent) or will be reaped by no one here
        pending.exit({ code: null, signal: 'SIGKILL' });
      }
      this.#pending.clear();
      this.#server.close();
      rmSync(this.#dir, { recursive: true, force: true });
    };
    this.#worker.on('error', lose);
    this.#worker.on('exit', (code) => lose(new Error(`the spawn thread has stopped (exit ${code})`)));
    // it keeps the process alive while a start is under way; a running agent's sockets do that afterwards
    this.#worker.unref();
    process.once('exit', () => rmSync(this.#dir, { recursive: true, force: true }));
  }

  get socketPath(): string {
    return this.#socketPath;
  }

  async spawn(request: SpawnRequest): Promise<StartedProcess> {
    await this.#listening;
    if (this.#lost) throw this.#lost;
    const id = randomBytes(SPAWN_ID_LENGTH / 2).toString('hex');
    let exit!: (e: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((resolve) => (exit = resolve));
    const started = new Promise<StartedProcess>((resolve, reject) => {
      this.#pending.set(id, {
        streams: new Array<Socket | undefined>(request.streams).fill(undefined),
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
    if (this.#starting++ === 0) this.#worker.ref();
    this.#worker.postMessage(order);
    try {
      return await started;
    } finally {
      if (--this.#starting === 0) this.#worker.unref();
    }
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
      if (!pending || pending.started || !Number.isInteger(index) || index < 0 || index >= pending.streams.length) {
        socket.destroy();
        return;
      }
      if (pending.streams[index]) {
        socket.destroy();
        return;
      }
      pending.streams[index] = socket;
      // taken: the thread starts the child once every stream has had this byte
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
        return;
      }
      case 'exited':
        pending.exitedAlready = true;
        pending.exit({ code: reply.code, signal: reply.signal });
        if (pending.started) this.#pending.delete(reply.id);
        return;
    }
  }

  #startIfReady(id: string, pending: Pending): void {
    if (pending.started || pending.pid === undefined || pending.streams.some((s) => s === undefined)) return;
    pending.started = true;
    if (pending.exitedAlready) this.#pending.delete(id);
    pending.resolve({ pid: pending.pid, streams: pending.streams as Socket[], exited: pending.exited });
  }
}

let thread: SpawnThread | undefined;

/** Test seam, not for use outside tests: the path of the listener the children's streams connect to. */
export function spawnListenerForTesting(): string | undefined {
  return thread?.socketPath;
}

/**
 * Starts `request.command` in a process group of its own, from the spawn thread; rejects as child_process's
 * `error` event would (`code` ENOENT: no such executable).
 */
export function spawnFromThread(request: SpawnRequest): Promise<StartedProcess> {
  thread ??= new SpawnThread(() => {
    thread = undefined;
  });
  return thread.spawn(request);
}
