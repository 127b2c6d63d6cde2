/**
 * Several ingress processes on one PostgreSQL database: dedupe, the sender rate limit and the failed-auth
 * budget hold across them, and a change made through one is enforced by the other at once.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_BUDGET_EXHAUSTED_TOPIC } from '../../src/kernel/topics.ts';
import { outputMatches, whenTold } from '../support/signals.ts';
import { ENGINES } from '../support/db.ts';
import { TEST_MASTER_KEY, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { deliveriesOf, post, seedWebhook, updateWebhook } from './support.ts';
import type { SeededWebhook } from './support.ts';

const onPostgres = ENGINES.includes('postgres');
const bearer = (secret: string | null) => ({ authorization: `Bearer ${secret}` });
const urlOn = (server: TestServer, hook: SeededWebhook) => `${server.url}/webhooks/w/${hook.uid}`;

describe.runIf(onPostgres)('two ingress processes on one PostgreSQL database', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer('postgres');
    b = await startTestServer('postgres', { database: a.database });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  async function seedOnBoth(options: Parameters<typeof seedWebhook>[1] = {}): Promise<SeededWebhook> {
    const hook = await seedWebhook(a, options);
    await b.server.services.routing?.reloadFactory(hook.factoryId);
    return hook;
  }

  it('concurrent identical deliveries through both processes: exactly one Accepted', async () => {
    const hook = await seedOnBoth();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        post(urlOn(i % 2 ? a : b, hook), '{"same":1}', { ...bearer(hook.secret), 'x-agentyard-delivery-id': 'x-1' }),
      ),
    );
    expect(results.every((r) => r.status === 202)).toBe(true);
    const rows = await deliveriesOf(a, hook.uid);
    expect(rows.filter((r) => r.label === 'accepted')).toHaveLength(1);
    expect(rows.filter((r) => r.label === 'duplicate')).toHaveLength(29);
  });

  it('the sender rate limit counts deliveries through both processes', async () => {
    const hook = await seedOnBoth();
    for (let i = 0; i < 60; i++)
      expect((await post(urlOn(i % 2 ? a : b, hook), `{"i":${i}}`, bearer(hook.secret))).status).toBe(202);
    expect((await post(urlOn(a, hook), '{"i":60}', bearer(hook.secret))).status).toBe(429);
    expect((await post(urlOn(b, hook), '{"i":61}', bearer(hook.secret))).status).toBe(429);
  });

  it('the failed-authentication budget is spent through both processes and then closes both', async () => {
    const hook = await seedOnBoth();
    for (let i = 0; i < 20; i++)
      expect((await post(urlOn(i % 2 ? a : b, hook), '{}', bearer('guess'))).status).toBe(401);
    // The 20th failure went through A (odd i): A refuses at once; B hears of it over LISTEN/NOTIFY.
    expect((await post(urlOn(a, hook), '{}', bearer(hook.secret))).status).toBe(429);
    const status = await whenTold(
      b.server.ctx.bus,
      [AUTH_BUDGET_EXHAUSTED_TOPIC],
      async () => {
        const answer = (await post(urlOn(b, hook), '{}', bearer('guess'))).status;
        return answer === 429 ? answer : undefined;
      },
      { what: 'B to hear that the budget ran out' },
    );
    expect(status).toBe(429);
    expect((await post(urlOn(b, hook), '{}', bearer(hook.secret))).status).toBe(429);
  });

  it('a rotation through one process is enforced by the other before its snapshot catches up', async () => {
    const hook = await seedOnBoth();
    const oldSecret = hook.secret;
    // Change the row and refresh only process A: B still holds the old secret in memory.
    await updateWebhook(a, hook, { secret: 'brand-new-secret' });
    const old = await post(urlOn(b, hook), '{"old":1}', bearer(oldSecret));
    expect(old.status).toBe(401);
    const fresh = await post(urlOn(b, hook), '{"new":1}', bearer('brand-new-secret'));
    expect(fresh.status).toBe(202);
  });

  it('a disable through one process is enforced by the other at once', async () => {
    const hook = await seedOnBoth();
    await a.server.ctx.db.query('UPDATE webhooks SET enabled = false WHERE uid = $1', [hook.uid]);
    const res = await post(urlOn(b, hook), '{"late":1}', bearer(hook.secret));
    expect(res.status).toBe(404);
    expect(await deliveriesOf(a, hook.uid)).toEqual([]);
  });
});

describe.runIf(onPostgres)('logs of a real server process', () => {
  let db: TestServer;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentyard-ingress-log-'));
  beforeAll(async () => {
    db = await startTestServer('postgres');
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('never write the token of a url_token webhook', async () => {
    const token = 'SuperSecretUrlToken-0123456789';
    const hook = await seedWebhook(db, { authMode: 'url_token', secret: token });
    const child = spawn(process.execPath, ['bin/agentyard.js', 'serve', '--port', '0', '--host', '127.0.0.1'], {
      env: {
        ...process.env,
        DATABASE_URL: db.database.url!,
        AGENTYARD_MASTER_KEY: TEST_MASTER_KEY,
        AGENTYARD_DATA_DIR: dataDir,
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      const url = (
        await outputMatches(child.stdout, /listening on (http:\/\/[^\s"]+?)[\s"(]/, {
          what: 'the server to listen',
          sofar: () => output,
        })
      )[1]!;
      expect((await post(`${url}/webhooks/w/${hook.uid}/${token}`, '{"a":1}')).status).toBe(202);
      expect((await post(`${url}/webhooks/w/${hook.uid}/${token}x`, '{"a":1}')).status).toBe(401);
      expect((await post(`${url}/webhooks/w/${hook.uid}/${token}`, 'not json')).status).toBe(400);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    expect(output).toContain(`/webhooks/w/${hook.uid}/[redacted]`);
    expect(output).not.toContain(token);
  });
});
