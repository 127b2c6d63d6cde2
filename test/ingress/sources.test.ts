/**
 * The spec's delivery-label and error tables, row by row, against webhooks as users make them: from a
 * committed definition file (git) and through the management API (managed factory).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_BODY_LIMIT } from '../../src/ingress/limits.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { baseFiles } from '../factories/fixtures.ts';
import { createGitFactory } from '../factories/support.ts';
import { createManagedFactory } from '../factories/support.ts';
import { deliveriesOf, post, send } from './support.ts';

interface Made {
  url: string;
  uid: string;
  secret: string;
  disable(): Promise<void>;
}

const SOURCES: Record<string, (server: TestServer) => Promise<Made>> = {
  'a committed definition file': async (server) => {
    const secret = `file-${randomBytes(12).toString('hex')}`;
    const secretName = `hook-${randomBytes(4).toString('hex')}`;
    await server.api('PUT', `/secrets/${secretName}`, { value: secret });
    const git = await createGitFactory(server, {
      ...baseFiles(),
      'webhooks/table.yaml': `authMode: token\nsecretName: ${secretName}\n`,
    });
    const [hook] = await git.webhooks();
    return {
      url: hook.ingress_url,
      uid: hook.uid,
      secret,
      async disable() {
        await git.commit(
          { 'webhooks/table.yaml': `authMode: token\nsecretName: ${secretName}\nenabled: false\n` },
          'disable',
        );
        expect((await git.sync()).result).toBe('applied');
      },
    };
  },
  'the management API': async (server) => {
    const factoryId = await createManagedFactory(server);
    const created = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'table' })).body;
    return {
      url: created.ingress_url,
      uid: created.uid,
      secret: created.secret,
      async disable() {
        expect((await server.api('PATCH', `/webhooks/${created.uid}`, { enabled: false })).status).toBe(200);
      },
    };
  },
};

describe.each(ENGINES)('labels and errors for webhooks from each source on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it.each(Object.keys(SOURCES))('%s', async (source) => {
    const hook = await SOURCES[source]!(server);
    const auth = { authorization: `Bearer ${hook.secret}` };
    const rows: [string, () => Promise<{ status: number }>, number, string | undefined][] = [
      ['Accepted', () => post(hook.url, '{"row":"accepted"}', auth), 202, 'accepted'],
      ['Duplicate', () => post(hook.url, '{"row":"accepted"}', auth), 202, 'duplicate'],
      [
        'Rejected (auth)',
        () => post(hook.url, '{"row":"auth"}', { authorization: 'Bearer wrong' }),
        401,
        'rejected_auth',
      ],
      ['Rejected (invalid JSON)', () => post(hook.url, '{"row":', auth), 400, 'rejected_invalid_json'],
      [
        'Rejected (too large)',
        () => post(hook.url, Buffer.alloc(WEBHOOK_BODY_LIMIT + 1, 0x20), auth),
        413,
        'rejected_too_large',
      ],
      ['405 (not POST)', () => send(hook.url, 'GET', undefined, auth), 405, undefined],
      [
        '404 (wrong UID)',
        () =>
          post(hook.url.replace(hook.uid, `${hook.uid.slice(0, -1)}${hook.uid.endsWith('0') ? '1' : '0'}`), '{}', auth),
        404,
        undefined,
      ],
    ];
    for (const [row, request, status] of rows) expect((await request()).status, row).toBe(status);
    expect((await deliveriesOf(server, hook.uid)).map((r) => r.label)).toEqual(
      rows.map(([, , , label]) => label).filter(Boolean),
    );

    // 429: the sender's 60 deliveries per minute, counted from the first request above (every known-webhook request spends one).
    let status = 0;
    for (let i = 0; i < 60 && status !== 429; i++) status = (await post(hook.url, `{"fill":${i}}`, auth)).status;
    expect(status).toBe(429);

    await hook.disable();
    expect((await post(hook.url, '{"after":"disable"}', auth)).status).toBe(404);
  });
});
