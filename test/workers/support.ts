/** A raw WebSocket client of the worker protocol, for tests that speak it frame by frame. */
import WebSocket from 'ws';
import { WORKER_PROTOCOL_VERSION } from '../../src/workers/protocol.ts';
import type { TestServer } from '../support/server.ts';

export interface Client {
  ws: WebSocket;
  messages: any[];
  next(type: string): Promise<any>;
  send(msg: unknown): void;
  closed: Promise<{ code: number; reason: string }>;
}

/** Connects with `key` (from the loopback address `from`, when given); a refused upgrade answers its status. */
export function connect(
  s: TestServer,
  key: string | undefined,
  from?: string,
): Promise<Client | { status: number; headers?: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/v1/workers/connect`, {
      ...(key ? { headers: { authorization: `Bearer ${key}` } } : {}),
      ...(from ? { localAddress: from } : {}),
    });
    const messages: any[] = [];
    const waiters: { type: string; resolve: (m: any) => void }[] = [];
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      const i = waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) waiters.splice(i, 1)[0]!.resolve(m);
      else messages.push(m);
    });
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on('unexpected-response', (_req, res) =>
      resolve(from ? { status: res.statusCode ?? 0, headers: res.headers } : { status: res.statusCode ?? 0 }),
    );
    ws.on('error', () => {});
    ws.on('open', () =>
      resolve({
        ws,
        messages,
        closed,
        send: (msg) => ws.send(JSON.stringify(msg)),
        next: (type) => {
          const i = messages.findIndex((m) => m.type === type);
          if (i >= 0) return Promise.resolve(messages.splice(i, 1)[0]);
          return new Promise((r) => waiters.push({ type, resolve: r }));
        },
      }),
    );
  });
}

export const hello = (workerId: string, capacity = 1) => ({
  type: 'hello',
  protocol: WORKER_PROTOCOL_VERSION,
  worker_id: workerId,
  capacity,
  harnesses: ['command'],
  default_harness: 'command',
  version: 'test',
  host: 'test-host',
  running: [],
});
