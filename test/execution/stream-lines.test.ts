/**
 * A pipe whose other end is killed with data it never read is reset (ECONNRESET). readline re-emits that error on
 * its interface, where no one listened, which crashed the server twice in runs of the orchestration tests (an
 * agent's control socket, fd 3, while a run tree was cancelled). Reproduced here with a real reset: a Unix socket
 * whose peer is closed with bytes unread.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { streamLines } from '../../src/execution/stream-lines.ts';
import { SandboxWorkspace } from '../../src/execution/sandbox-workspace.ts';

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.splice(0)) c();
});

/** Our end of a Unix socket, and a reset of it: the peer reads nothing and closes with our bytes unread. */
async function resettable(): Promise<{
  ours: Socket;
  sendLine(text: string): void;
  endPeer(): void;
  reset(): Promise<void>;
}> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-reset-'));
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path.join(dir, 's'), resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const ours = connect(path.join(dir, 's'));
  const peer = await accepted;
  peer.pause();
  cleanup.push(() => {
    ours.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    ours,
    sendLine: (text) => peer.write(`${text}\n`),
    endPeer: () => peer.end(),
    async reset() {
      // bytes the peer never reads, then its close: our next read is ECONNRESET
      await new Promise<void>((resolve) => ours.write(Buffer.alloc(64 * 1024), () => resolve()));
      const failed = new Promise<Error>((resolve) => ours.once('error', resolve));
      peer.destroy();
      expect(((await failed) as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    },
  };
}

describe('lines read from a pipe that is reset', () => {
  it('keep the lines read, then end, with nothing thrown', async () => {
    const pipe = await resettable();
    const seen: string[] = [];
    const lines = streamLines(pipe.ours, (line) => seen.push(line));
    const closed = new Promise<void>((resolve) => lines.once('close', resolve));
    const first = new Promise<void>((resolve) => lines.once('line', () => resolve()));
    pipe.sendLine('before the reset');
    await first;
    await pipe.reset();
    await closed;
    expect(seen).toEqual(['before the reset']);
  });

  it("settle a sandbox's workspace exchange, which never started", async () => {
    const pipe = await resettable();
    const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-ws-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const workspace = new SandboxWorkspace(dir, 1024 * 1024, () => {});
    workspace.attach(process.pid, pipe.ours);
    await pipe.reset();
    await workspace.settled;
    expect(workspace.result.lost).toBeUndefined();
  });
});

describe('lines read from a socket that ended before they were asked for', () => {
  it('end at once: a socket emits its end unread when nothing was buffered', async () => {
    const pipe = await resettable();
    const ended = new Promise<void>((resolve) => pipe.ours.once('end', () => resolve()));
    pipe.endPeer();
    await ended;
    const lines = streamLines(pipe.ours, () => {});
    await new Promise<void>((resolve) => lines.once('close', resolve));
  });

  it('keep what was buffered before the end, then end', async () => {
    const pipe = await resettable();
    pipe.sendLine('buffered');
    pipe.endPeer();
    // a turn for the bytes and the end to arrive while nothing reads them
    await new Promise((resolve) => setTimeout(resolve, 50));
    const seen: string[] = [];
    const lines = streamLines(pipe.ours, (line) => seen.push(line));
    await new Promise<void>((resolve) => lines.once('close', resolve));
    expect(seen).toEqual(['buffered']);
  });
});
