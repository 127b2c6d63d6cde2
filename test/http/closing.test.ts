/**
 * Closing the HTTP server (src/http/closing.ts): an answer under way when the server closes is sent, and its
 * connection ends with it instead of staying open for the client's keep-alive (71 s with fetch); a connection
 * still open after the grace (an event stream) is cut.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { closeConnectionsPromptly } from '../../src/http/closing.ts';
import { createLogger } from '../../src/log.ts';
import { within } from '../support/deadline.ts';

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

async function listening(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<[Server, string]> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return [server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`];
}

const closed = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe('closing the HTTP server', () => {
  it('ends the connection of an answer under way once it is sent, without a grace to wait for', async () => {
    const entered = signal();
    const release = signal();
    const [server, url] = await listening((req, res) => {
      if (req.url !== '/slow') return void res.end('first');
      entered.fire();
      void release.promise.then(() => res.end('done'));
    });
    // as Fastify announces it (fetch keeps the connection 71 s), and no grace in practice: only the answer's end
    // may close its connection
    server.keepAliveTimeout = 72_000;
    const closing = closeConnectionsPromptly(server, 3_600_000);
    // a connection idle when the server closes (Node closes those itself)
    expect(
      await within(
        'a first answer',
        fetch(`${url}/first`).then((r) => r.text()),
        10_000,
      ),
    ).toBe('first');
    const answer = fetch(`${url}/slow`).then(async (r) => ({ status: r.status, body: await r.text() }));
    await within('the request to reach the server', entered.promise, 10_000);
    closing.begin();
    // answered once Node has closed the connections idle at its close: this one was not
    const close = closed(server);
    release.fire();
    expect(await within('the answer under way', answer, 10_000)).toEqual({ status: 200, body: 'done' });
    await within('the server to close once its last answer was sent', close, 10_000);
  });

  it('cuts what is still open after the grace: an event stream that never ends', async () => {
    const streaming = signal();
    const ended = signal();
    const [server, url] = await listening((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('retry: 2000\n\n');
      req.on('close', ended.fire);
      streaming.fire();
    });
    const closing = closeConnectionsPromptly(server, 50);
    const stream = await fetch(`${url}/events`);
    const body = stream.text().then(
      () => 'ended',
      () => 'cut',
    );
    await within('the stream to start', streaming.promise, 10_000);
    closing.begin();
    await within('the server to close after the grace', closed(server), 10_000);
    await within('the stream to see its connection close', ended.promise, 10_000);
    expect(await body).toBe('cut');
  });

  it('is what the app does: its close does not wait on a connection whose answer was under way', async () => {
    const entered = signal();
    const release = signal();
    const app = await buildApp(
      {
        log: createLogger('silent'),
        config: { bodyTimeoutSeconds: 30 },
        authenticator: { authenticateFrom: async () => undefined },
      },
      [
        {
          name: 'slow',
          root: async (root) => {
            root.get('/slow', async () => {
              entered.fire();
              await release.promise;
              return { ok: true };
            });
          },
        },
      ],
    );
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    // answered only once the Node server has begun to close (Fastify closes it after its own hooks)
    const serverClose = app.server.close.bind(app.server);
    app.server.close = (callback?: (err?: Error) => void) => {
      serverClose(callback);
      release.fire();
      return app.server;
    };
    const answer = fetch(`${url}/slow`).then(async (r) => ({ status: r.status, body: await r.json() }));
    await within('the request to reach the app', entered.promise, 10_000);
    const close = app.close();
    expect(await within('the answer under way', answer, 10_000)).toEqual({ status: 200, body: { ok: true } });
    // before, this waited for the client's keep-alive (71 s); the grace is 5 s
    await within('the app to close', close, 20_000);
  });
});
