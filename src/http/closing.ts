/**
 * Closing the HTTP server without waiting on its clients. Node's `server.close()` (Fastify's `close()` calls it)
 * closes the keep-alive connections idle at that moment and then waits until every other connection has ended.
 * A connection whose request was being answered stays open after its answer for as long as its client keeps
 * it (Fastify announces `Keep-Alive: timeout=72`, and fetch keeps such a connection 71 s), and an event stream
 * never ends by itself: the stop of the process waited 71 s for the first and forever for the second.
 * So once the server closes, a connection is closed as soon as its answer is sent, and whatever is still open
 * after the grace period (event streams, an answer that does not come) is cut, as a client going away would.
 */
import type { Server } from 'node:http';

/** How long answers under way when the server closes have to finish before their connections are cut. */
export const CLOSE_GRACE_MS = 5_000;

export interface ClosingConnections {
  /** The server is closing: from now on connections end with their answers, and all of them after the grace. */
  begin(): void;
}

export function closeConnectionsPromptly(server: Server, graceMs = CLOSE_GRACE_MS): ClosingConnections {
  let closing = false;
  // The response's `close` comes after Node has detached it from its socket: the connection counts as idle then.
  const answered = () => {
    if (closing) setImmediate(() => server.closeIdleConnections());
  };
  server.on('request', (_request, response) => response.once('close', answered));
  return {
    begin() {
      if (closing || !server.listening) return;
      closing = true;
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      cut.unref();
      server.once('close', () => clearTimeout(cut));
    },
  };
}
