/**
 * The reconcile loops on their work queue, against a git host answering 503 (a transient failure): retries on
 * the factory's back-off (2 s, doubling) by the injected clock, and requests coalescing while a fetch runs.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { askWhenPoked } from '../support/signals.ts';
import type { TestServer } from '../support/server.ts';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe.each(ENGINES)('reconcile loops on %s', (engine) => {
  let server: TestServer;
  let gitHost: Server;
  let hits = 0;
  /** While set, requests wait here instead of being answered. */
  let held: ServerResponse[] | undefined;
  /** Told each request the git host received. */
  const requested = new EventEmitter();
  const clock = new ManualClock();
  const answer = (res: ServerResponse) =>
    res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance\n');

  beforeAll(async () => {
    gitHost = createServer((_req, res) => {
      hits++;
      if (held) held.push(res);
      else answer(res);
      requested.emit('request');
    });
    await new Promise<void>((resolve) => gitHost.listen(0, '127.0.0.1', resolve));
    server = await startTestServer(engine, { config: { sourceAllowedHosts: ['127.0.0.1'] }, compose: { clock } });
  });
  afterAll(async () => {
    await server?.close();
    await new Promise((resolve) => gitHost?.close(resolve));
  });

  it('retries a transient fetch failure after 2 s, then 4 s, and stops when the factory goes', async () => {
    const controller = server.server.services.controller;
    // asked again after each reconcile ends, never on a timer
    const afterReconciles = (check: () => boolean, what: string) =>
      askWhenPoked((poke) => controller.onReconciled(poke), check, { what, timeoutMs: 15_000 });
    const { port } = gitHost.address() as AddressInfo;
    const created = await server.api('POST', '/factories', {
      name: `flaky-${engine}`,
      source: { type: 'git', url: `http://127.0.0.1:${port}/acme/factory.git`, poll_interval_seconds: 0 },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    await afterReconciles(() => controller.retrying === 1, 'the first retry to be scheduled');
    const status = (await server.api('GET', `/factories/${id}`)).body.status;
    expect(status.source_error).toMatchObject({ reason: 'FetchFailed', kind: 'transient' });

    const afterFirst = hits;
    expect(afterFirst).toBeGreaterThan(0);
    clock.advance(1_999);
    await settle();
    expect(controller.retrying).toBe(1);
    expect(hits).toBe(afterFirst);
    clock.advance(1);
    await afterReconciles(() => hits > afterFirst && controller.retrying === 1, 'the retry after 2 s');

    const afterSecond = hits;
    clock.advance(3_999);
    await settle();
    expect(hits).toBe(afterSecond);
    clock.advance(1);
    await afterReconciles(() => hits > afterSecond && controller.retrying === 1, 'the retry after 4 s');

    expect((await server.api('DELETE', `/factories/${id}`)).status).toBe(200);
    // the delete forgets the factory before it answers
    expect(controller.retrying).toBe(0);
    const afterDelete = hits;
    clock.advance(10 * 60_000);
    await settle();
    expect(hits).toBe(afterDelete);
  });

  it('coalesces the requests made while a fetch runs into one more reconcile that fetches after them', async () => {
    const controller = server.server.services.controller;
    const { port } = gitHost.address() as AddressInfo;
    held = [];
    const created = await server.api('POST', '/factories', {
      name: `held-${engine}`,
      source: { type: 'git', url: `http://127.0.0.1:${port}/acme/held.git`, poll_interval_seconds: 0 },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    // The first reconcile (at creation) is fetching: its request waits at the git host.
    await askWhenPoked(
      (poke) => {
        requested.on('request', poke);
        return () => requested.off('request', poke);
      },
      () => held?.length === 1,
      { what: 'the first fetch to reach the git host', timeoutMs: 15_000 },
    );
    const before = hits;
    const requests = [
      controller.request(id, 'poll', false),
      controller.request(id, 'sync', true),
      controller.request(id, 'poll', false),
    ];
    await settle();
    expect(hits).toBe(before);
    const waiting = held;
    held = undefined;
    for (const res of waiting) answer(res);
    const [first, second, third] = await Promise.all(requests);
    expect(first).toMatchObject({ factoryId: id, result: 'failed', reason: 'FetchFailed', transient: true });
    expect(second).toBe(first);
    expect(third).toBe(first);
    // One fetch for all three, after the one that was running.
    expect(hits).toBe(before + 1);
    expect((await server.api('DELETE', `/factories/${id}`)).status).toBe(200);
  });
});
