/** Log output: readable lines on a terminal, one JSON object per line otherwise, LOG_FORMAT deciding first. */
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseLogFormat } from '../src/config.ts';
import { createLogger, prettyStream } from '../src/log.ts';
import { rootWarning } from '../src/server.ts';
import { startTestServer } from './support/server.ts';
import { outputMatches } from './support/signals.ts';

describe('the log format', () => {
  it('is pretty on a terminal and JSON on a pipe, unless LOG_FORMAT says', () => {
    expect(parseLogFormat(undefined, true)).toBe('pretty');
    expect(parseLogFormat(undefined, false)).toBe('json');
    expect(parseLogFormat('JSON', true)).toBe('json');
    expect(parseLogFormat(' pretty ', false)).toBe('pretty');
    expect(() => parseLogFormat('xml', true)).toThrow('LOG_FORMAT must be json or pretty, got "xml"');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
  });

  it('pretty: a readable line with the level, the message and the fields', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const log = pino({ level: 'info' }, prettyStream(out));
    log.info({ factory_id: 'fac_1' }, 'factory demo follows ./demo');
    await outputMatches(out, /factory demo follows \.\/demo\n\s+factory_id: "fac_1"\n/, {
      what: 'the line',
      sofar: () => text,
    });
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: factory demo follows \.\/demo\n\s+factory_id: "fac_1"\n$/);
    expect(text).not.toContain('{"level"');
  });
});

describe('one line per request', () => {
  /** A real server logging at info into a buffer, in the pretty or the JSON format. */
  async function serverLogging(format: 'pretty' | 'json') {
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const log = createLogger('info', format, out);
    const server = await startTestServer('pglite', { log });
    return { server, out, text: () => text };
  }

  it('pretty: an API request, a console page and a webhook delivery are one line each, the token redacted', async () => {
    const { server, out, text } = await serverLogging('pretty');
    try {
      await server.api('GET', '/agent/runs?limit=1');
      await fetch(`${server.url}/console/login`);
      await fetch(`${server.url}/webhooks/w/wh_01m8garw5vyeb7z6nbz0cmqdbf/s3cr3t-url-token`, {
        method: 'POST',
        body: '{}',
      });
      const expected = [
        /^\[\d\d:\d\d:\d\d\] INFO: GET \/api\/v1\/agent\/runs 200 \d+ ms$/,
        /^\[\d\d:\d\d:\d\d\] INFO: GET \/console\/login \d{3} \d+ ms$/,
        /^\[\d\d:\d\d:\d\d\] INFO: POST \/webhooks\/w\/wh_01m8garw5vyeb7z6nbz0cmqdbf\/\[redacted\] 404 \d+ ms$/,
      ];
      for (const re of expected)
        await outputMatches(out, new RegExp(re.source, 'm'), { what: `a line like ${re}`, sofar: text });
      const lines = text().split('\n');
      for (const re of expected) {
        const at = lines.findIndex((l) => re.test(l));
        // The next line is another entry (or nothing yet), never a field of this one.
        expect(lines[at + 1] ?? '', lines.join('\n')).not.toMatch(/^\s/);
      }
      expect(text()).not.toContain('incoming request');
      expect(text()).not.toContain('s3cr3t-url-token');
    } finally {
      await server.close();
    }
  });

  it('json: one object per request with the method, URL, status and time', async () => {
    const { server, out, text } = await serverLogging('json');
    try {
      await server.api('GET', '/agent/runs?limit=1');
      const entry = () =>
        text()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, any>)
          .filter((e) => e.req?.url === '/api/v1/agent/runs?limit=1');
      await outputMatches(out, /"url":"\/api\/v1\/agent\/runs\?limit=1".*\n/, {
        what: 'the request line',
        sofar: text,
      });
      expect(entry().length).toBe(1);
      expect(entry()[0]).toMatchObject({
        level: 30,
        msg: expect.stringMatching(/^GET \/api\/v1\/agent\/runs 200 \d+ ms$/),
        req: { method: 'GET', id: expect.any(String) },
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
      });
    } finally {
      await server.close();
    }
  });
});

describe('running as root', () => {
  it('is warned about at start, and only then', () => {
    expect(rootWarning(0)).toMatch(/^running as root: .*run Agentyard as an ordinary user/);
    expect(rootWarning(1000)).toBeUndefined();
    expect(rootWarning(undefined)).toBeUndefined();
  });

  it('a server started by this user warns exactly when the user is root', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const server = await startTestServer('pglite', { log: createLogger('info', 'json', out) });
    try {
      const warned = () =>
        text
          .split('\n')
          .filter(Boolean)
          .some((l) => (JSON.parse(l) as { level: number; msg: string }).msg.startsWith('running as root'));
      await outputMatches(out, /"msg"/, { what: 'the first log line', sofar: () => text });
      expect(warned()).toBe(process.getuid?.() === 0);
    } finally {
      await server.close();
    }
  });
});
