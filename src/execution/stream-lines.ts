/**
 * A pipe read line by line, where the other end is an agent that can be killed mid-exchange. readline re-emits
 * its input's error on its interface, where an unheard one crashes the server: a reset of the pipe (ECONNRESET,
 * data the agent never read) ends the lines as the pipe's end does, and what was read counts.
 */
import { createInterface } from 'node:readline';
import type { Interface } from 'node:readline';
import type { Readable } from 'node:stream';

export function streamLines(input: Readable, onLine: (line: string) => void): Interface {
  const lines = createInterface({ input, crlfDelay: Infinity });
  input.on('error', () => {});
  lines.on('error', () => lines.close());
  lines.on('line', onLine);
  // A socket emits 'end' at its peer's end once nothing is buffered, read or not: one that ended before it was
  // handed over held no lines, and ends them at once.
  if (input.readableEnded) queueMicrotask(() => lines.close());
  return lines;
}
