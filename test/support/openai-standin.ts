/**
 * A stand-in for an OpenAI-compatible chat-completions endpoint on loopback: the model is the one part these
 * machines cannot reach. A test scripts each reply from the request (a tool call, an answer, a judge's JSON,
 * or no answer at all), and the stand-in answers in the real wire format: Server-Sent Events of
 * `chat.completion.chunk` objects ending in `data: [DONE]` when the request streams, one `chat.completion`
 * object otherwise. It records every request (with its Authorization header) and when each reply ended.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandinToolCall {
  name: string;
  /** The arguments as the model writes them: usually JSON, possibly not. */
  arguments: string;
  id?: string;
}

export type StandinReply =
  | { content?: string; toolCalls?: StandinToolCall[]; usage?: { prompt_tokens: number; completion_tokens: number } }
  /** Holds the request open without an answer until the client gives up (a hung endpoint). */
  | { hang: true }
  /** Answers with this HTTP status and error message. */
  | { status: number; error: string };

export interface StandinMessage {
  role: string;
  content?: string | null | { type: string; text?: string }[];
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface StandinRequest {
  model: string;
  messages: StandinMessage[];
  stream: boolean;
  tools: { function: { name: string } }[];
  authorization: string | undefined;
  /** performance.now() when the request's headers arrived (the client had its body ready). */
  receivedAt: number;
}

export type Script = (req: StandinRequest) => StandinReply | Promise<StandinReply>;

export interface OpenAiStandin {
  /** The base URL, ending in /v1. */
  baseUrl: string;
  requests: StandinRequest[];
  /** performance.now() when each reply's last byte was written, in request order. */
  repliedAt: number[];
  script: Script;
  /** Resolves when a request satisfying `match` arrives (or has arrived). */
  waitForRequest(match: (req: StandinRequest) => boolean): Promise<StandinRequest>;
  close(): Promise<void>;
}

/** The text of a message's content. */
export function textOf(message: StandinMessage | undefined): string {
  const c = message?.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => p.text ?? '').join('');
  return '';
}

/** The first user message of a conversation: what a script keys on. */
export function firstUser(req: StandinRequest): string {
  return textOf(req.messages.find((m) => m.role === 'user'));
}

/** The tool results handed back so far. */
export function toolResults(req: StandinRequest): StandinMessage[] {
  return req.messages.filter((m) => m.role === 'tool');
}

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startOpenAiStandin(script: Script = () => ({ content: 'done' })): Promise<OpenAiStandin> {
  const requests: StandinRequest[] = [];
  const repliedAt: number[] = [];
  const hung = new Set<ServerResponse>();
  const waiters: { match: (r: StandinRequest) => boolean; resolve: (r: StandinRequest) => void }[] = [];
  let n = 0;
  const standin: OpenAiStandin = {
    baseUrl: '',
    requests,
    repliedAt,
    script,
    waitForRequest(match) {
      const seen = requests.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      server.close();
    },
  };

  const server: Server = createServer((req, res) => {
    const receivedAt = performance.now();
    void (async () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const body = JSON.parse(await readBody(req)) as Record<string, unknown>;
      const request: StandinRequest = {
        model: String(body.model),
        messages: (body.messages as StandinMessage[]) ?? [],
        stream: body.stream === true,
        tools: (body.tools as StandinRequest['tools']) ?? [],
        authorization: req.headers.authorization,
        receivedAt,
      };
      requests.push(request);
      for (const w of [...waiters])
        if (w.match(request)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(request);
        }
      const reply = await standin.script(request);
      if ('hang' in reply) {
        hung.add(res);
        res.once('close', () => hung.delete(res));
        return;
      }
      if ('status' in reply) {
        res.writeHead(reply.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: reply.error, type: 'standin_error' } }));
        return;
      }
      const id = `chatcmpl-${++n}`;
      const created = Math.floor(Date.now() / 1000);
      const usage = {
        prompt_tokens: reply.usage?.prompt_tokens ?? 100,
        completion_tokens: reply.usage?.completion_tokens ?? 20,
        total_tokens: (reply.usage?.prompt_tokens ?? 100) + (reply.usage?.completion_tokens ?? 20),
      };
      const calls = (reply.toolCalls ?? []).map((c, i) => ({ ...c, id: c.id ?? `call_${n}_${i}` }));
      const finish = calls.length ? 'tool_calls' : 'stop';
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: request.model,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: reply.content ?? null,
                  ...(calls.length
                    ? {
                        tool_calls: calls.map((c) => ({
                          id: c.id,
                          type: 'function',
                          function: { name: c.name, arguments: c.arguments },
                        })),
                      }
                    : {}),
                },
                finish_reason: finish,
              },
            ],
            usage,
          }),
        );
        repliedAt.push(performance.now());
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: request.model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
      sse(res, chunk({ role: 'assistant', content: '' }));
      // text in a few pieces, as a model streams it
      const text = reply.content ?? '';
      for (let i = 0; i < text.length; i += 16) sse(res, chunk({ content: text.slice(i, i + 16) }));
      calls.forEach((c, index) => {
        sse(
          res,
          chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
        );
        for (let i = 0; i < c.arguments.length; i += 24)
          sse(res, chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(i, i + 24) } }] }));
      });
      sse(res, chunk({}, finish));
      const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
      if (includeUsage)
        sse(res, { id, object: 'chat.completion.chunk', created, model: request.model, choices: [], usage });
      res.write('data: [DONE]\n\n');
      res.end();
      repliedAt.push(performance.now());
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(err) } }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  standin.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return standin;
}
