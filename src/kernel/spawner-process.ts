/**
 * The spawner of src/kernel/spawner.ts: a small process that starts agents, git and other commands, so that a fork
 * copies its page tables, not the server's. Each child's standard streams are sockets it connects to the listener
 * of the thread that ordered it, each announced by a header (the spawn's id and the stream's index) and taken by
 * that thread before the fork; it closes its copies once the child holds them. It ends when the server does (its
 * IPC channel closes), and bubblewrap's `--die-with-parent` then ends the sandboxes it started.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { SpawnReply, SpawnOrder } from './spawn-protocol.ts';
import { streamHeader } from './spawn-protocol.ts';

/** A stream the listener has not taken by then fails the start. */
const ACK_TIMEOUT_MS = 10_000;

/** The libuv stream under a net.Socket: `uv_stream_set_blocking`, which Node has no public name for. */
interface BlockingHandle {
  setBlocking(blocking: boolean): number;
}

/** Connects one stream and announces it; resolves once the listener has taken it (one byte back). */
function connectStream(path: string, id: string, index: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const refused = (): void => {
      socket.destroy();
      reject(new Error('the spawn listener did not take the stream of a new process'));
    };
    const timer = setTimeout(refused, ACK_TIMEOUT_MS);
    socket.once('error', refused);
    socket.once('close', refused);
    socket.once('connect', () => socket.write(streamHeader(id, index)));
    socket.once('data', () => {
      clearTimeout(timer);
      socket.off('error', refused);
      socket.off('close', refused);
      socket.on('error', () => {});
      // nothing more is read here: whatever comes next is the child's
      socket.pause();
      resolve(socket);
    });
  });
}

function send(reply: SpawnReply): void {
  // the server may be gone (it exits while a child still ends): the reply is then no one's
  if (process.connected) process.send?.(reply, () => {});
}

async function start(order: SpawnOrder): Promise<void> {
  let sockets: Socket[] = [];
  try {
    sockets = await Promise.all(
      Array.from({ length: order.streams }, (_, i) => connectStream(order.socketPath, order.id, i)),
    );
    // The child shares these sockets' open files, and so their O_NONBLOCK: an agent expects blocking standard
    // streams, as child_process gives it (libuv clears the flag itself only on fds 0-2).
    for (const socket of sockets) (socket as unknown as { _handle?: BlockingHandle })._handle?.setBlocking(true);
    const child = spawn(order.command, order.args, {
      cwd: order.cwd,
      env: order.env,
      detached: true,
      stdio: sockets,
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) send({ kind: 'failed', id: order.id, message: err.message, code: err.code });
    });
    child.once('spawn', () => send({ kind: 'spawned', id: order.id, pid: child.pid! }));
    child.once('exit', (code, signal) => send({ kind: 'exited', id: order.id, code, signal }));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    send({ kind: 'failed', id: order.id, message: e.message, code: e.code });
  } finally {
    // the child holds its own copies now (or there is no child): these would keep its streams from ending
    for (const socket of sockets) socket.destroy();
  }
}

process.on('message', (order: SpawnOrder) => void start(order));
process.on('disconnect', () => process.exit(0));
// A signal to the server's process group (Ctrl-C, a service manager's stop) is the server's to handle: it stops
// its agents, sparing a sandbox whose workspace is still to be copied out, and only then lets this process go.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {});
