/** Log output: readable lines on a terminal, one JSON object per line otherwise, LOG_FORMAT deciding first. */
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseLogFormat } from '../src/config.ts';
import { prettyStream } from '../src/log.ts';

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
    await expect.poll(() => text).toContain('factory demo follows ./demo');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: factory demo follows \.\/demo\n\s+factory_id: "fac_1"\n$/);
    expect(text).not.toContain('{"level"');
  });
});
