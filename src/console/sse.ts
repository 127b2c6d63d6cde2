/** Server-sent events as the API writes them: `id:`, `event:` and one `data:` line per message. */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/** Reads a stream of server-sent events chunk by chunk; comments (keep-alives) and `retry:` are skipped. */
export class SseReader {
  #buffer = '';

  push(chunk: string): SseMessage[] {
    this.#buffer += chunk.replace(/\r\n?/g, '\n');
    const out: SseMessage[] = [];
    for (let end = this.#buffer.indexOf('\n\n'); end >= 0; end = this.#buffer.indexOf('\n\n')) {
      const block = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      const message = parseBlock(block);
      if (message) out.push(message);
    }
    return out;
  }
}

function parseBlock(block: string): SseMessage | undefined {
  let id: string | undefined;
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  return { ...(id !== undefined ? { id } : {}), event, data: data.join('\n') };
}

export function parseSse(text: string): SseMessage[] {
  return new SseReader().push(`${text}\n\n`);
}
