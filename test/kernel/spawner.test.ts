/**
 * Agent processes started by the spawner process (src/kernel/spawner.ts): their standard streams are
 * sockets to the event loop, as child_process's pipes are, and the listener they connect to refuses what is
 * not one of them.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { HEADER_TIMEOUT_MS, MAX_UNANNOUNCED, spawnProcess, spawnListenerForTesting } from '../../src/kernel/spawner.ts';
import type { StartedProcess } from '../../src/kernel/spawner.ts';
import { serveSpawnerToThreads } from '../../src/kernel/spawner-link.ts';
import { pollUntil } from '../support/signals.ts';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.once('end', () => resolve(text));
  });
}

/** The fields of /proc/<pid>/stat after the command's name: [state, ppid, pgrp, …]. */
function statOf(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function sh(script: string, streams: 3 | 4 = 3): Promise<StartedProcess> {
  return spawnProcess({ command: '/bin/sh', args: ['-c', script], cwd: '/tmp', env, streams });
}

/** Resolves when the listener has closed the connection. */
function closedBy(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

describe('the agent spawner', () => {
  it('gives the child stdin, stdout and stderr, its cwd and environment, and reports its exit', async () => {
    const child = await spawnProcess({
      command: '/bin/sh',
      args: ['-c', 'echo "$PWD $GREETING"; cat; echo oops >&2; exit 7'],
      cwd: '/tmp',
      env: { ...env, GREETING: 'hello' },
      streams: 3,
    });
    const [stdin, stdout, stderr] = child.streams;
    const out = readAll(stdout!);
    const err = readAll(stderr!);
    stdin!.end('from stdin\n');
    expect(await child.exited).toEqual({ code: 7, signal: null });
    expect(await out).toBe('/tmp hello\nfrom stdin\n');
    expect(await err).toBe('oops\n');
  });

  it('gives each of many children started at once its own streams', async () => {
    const children = await Promise.all(Array.from({ length: 32 }, (_, i) => sh(`cat; echo "child ${i}" >&2`)));
    const outputs = await Promise.all(
      children.map(async (child, i) => {
        const [stdin, stdout, stderr] = child.streams;
        const out = readAll(stdout!);
        const err = readAll(stderr!);
        stdin!.end(`input ${i}\n`);
        await child.exited;
        return [await out, await err];
      }),
    );
    expect(outputs).toEqual(Array.from({ length: 32 }, (_, i) => [`input ${i}\n`, `child ${i}\n`]));
  });

  it('closes a child that exits at once with nothing written, and destroys its stdin at the exit', async () => {
    // its empty stdout and stderr may end and close before the caller has the streams: `closed` heard them
    for (let i = 0; i < 20; i++) {
      const child = await sh('exit 3');
      expect(await child.closed).toEqual({ code: 3, signal: null });
      expect(child.streams[0]!.destroyed).toBe(true);
    }
  });

  it('starts the child in a process group of its own, a child of the spawner, which is this process’s', async () => {
    const child = await sh('sleep 30');
    const [, spawnerPid, pgid] = statOf(child.pid);
    expect(Number(pgid)).toBe(child.pid);
    expect(Number(statOf(Number(spawnerPid))[1])).toBe(process.pid);
    process.kill(-child.pid, 'SIGTERM');
    expect(await child.exited).toEqual({ code: null, signal: 'SIGTERM' });
    for (const s of child.streams) s.destroy();
  });

  it('starts what another thread orders from this thread’s spawner, the streams going to that thread', async () => {
    serveSpawnerToThreads();
    const here = await sh('echo $PPID');
    const ppidHere = readAll(here.streams[1]!);
    await here.exited;
    const spawnerPid = Number(await ppidHere);
    const inThread = (script: string, input: string) =>
      new Promise<{ stdout: string; code: number | null; failure?: string }>((resolve, reject) => {
        const worker = new Worker(new URL('../fixtures/threads/run-command-in-thread.ts', import.meta.url), {
          workerData: { script, input },
        });
        worker.once('message', resolve);
        worker.once('error', reject);
      });
    const results = await Promise.all([1, 2, 3].map((i) => inThread('echo "$PPID $(cat)"', `thread ${i}`)));
    expect(results).toEqual([1, 2, 3].map((i) => ({ stdout: `${spawnerPid} thread ${i}\n`, code: 0 })));
    // one spawner for the process: the threads forked none of their own
    const spawners = readdirSync('/proc').filter((entry) => {
      if (!/^\d+$/.test(entry)) return false;
      try {
        return (
          Number(statOf(Number(entry))[1]) === process.pid &&
          readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('spawner-process')
        );
      } catch {
        return false;
      }
    });
    expect(spawners).toEqual([String(spawnerPid)]);
  });

  it('gives fd 3 as a socket both ways, blocking in the child as its other streams are', async () => {
    // a shell's `read` on a non-blocking descriptor fails at once (EAGAIN) instead of waiting for the line
    const child = await sh('read line <&3 && echo "got $line" >&3', 4);
    const control = child.streams[3]!;
    const answer = readAll(control);
    setTimeout(() => control.write('ping\n'), 50);
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(await answer).toBe('got ping\n');
    for (const s of child.streams) s.destroy();
  });

  it('rejects with ENOENT for a command that does not exist, as child_process does', async () => {
    await expect(
      spawnProcess({ command: '/no/such/agent', args: [], cwd: '/tmp', env, streams: 3 }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('closes connections to its listener that are not a started child’s, and keeps serving', async () => {
    await sh('true').then((c) => c.exited);
    const listener = spawnListenerForTesting()!;
    const open = (first?: string): Socket => {
      const socket = connect(listener);
      socket.on('error', () => {});
      if (first !== undefined) socket.write(first);
      return socket;
    };
    // a header naming no spawn, and one that is not a header at all
    const unknown = open(`${'0'.repeat(32)}1`);
    const garbage = open('GET / HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n');
    await Promise.all([closedBy(unknown), closedBy(garbage)]);
    // a flood of silent connections: past MAX_UNANNOUNCED waiting for their header, the listener closes them at
    // once, so a start meanwhile fails instead of waiting; once they are gone, starts work again
    const silent = Array.from({ length: MAX_UNANNOUNCED + 16 }, () => open());
    await Promise.all(silent.slice(MAX_UNANNOUNCED).map(closedBy));
    await expect(sh('echo too soon')).rejects.toThrow(/did not take the stream/);
    for (const socket of silent) socket.destroy();
    // the listener frees their places as it sees them close, which no event tells this side
    const child = await pollUntil(() => sh('echo still here'), { what: 'a start once the flood is closed' });
    const out = readAll(child.streams[1]!);
    await child.exited;
    expect(await out).toBe('still here\n');
    for (const s of child.streams) s.destroy();
  });

  it('closes a connection that has not said which stream it is within its header timeout', async () => {
    await sh('true').then((c) => c.exited);
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    // the listener arms its timer as it accepts: from here on, on the test's clock
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const socket = connect(spawnListenerForTesting()!);
    socket.on('error', () => {});
    let closed = false;
    socket.once('close', () => (closed = true));
    try {
      await once(socket, 'connect');
      // a partial header, which does not announce the stream
      socket.write('0123');
      await turns(20);
      vi.advanceTimersByTime(HEADER_TIMEOUT_MS - 1);
      await turns(20);
      expect(closed).toBe(false);
      vi.advanceTimersByTime(1);
      for (let i = 0; i < 200 && !closed; i++) await turns(1);
      expect(closed).toBe(true);
    } finally {
      vi.useRealTimers();
      socket.destroy();
    }
  });

  it('survives the loss of its spawner process: a child in flight is reported killed, the next start forks anew', async () => {
    const child = await sh('exec sleep 30');
    const spawnerPid = Number(statOf(child.pid)[1]);
    try {
      process.kill(spawnerPid, 'SIGKILL');
      expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
      const next = await sh('echo $PPID');
      const out = readAll(next.streams[1]!);
      expect(await next.exited).toEqual({ code: 0, signal: null });
      const newSpawner = Number(await out);
      expect(newSpawner).not.toBe(spawnerPid);
      expect(Number(statOf(newSpawner)[1])).toBe(process.pid);
    } finally {
      // a plain command outlives its spawner (no --die-with-parent): end it here
      process.kill(-child.pid, 'SIGKILL');
      for (const s of child.streams) s.destroy();
    }
  });
});
