/**
 * Issue 28, item 6: anonymous validation stalled every team's apply. A 278 KB file of 20,000 keys took ~10 s of
 * the single validation worker, 8 such requests left 7 unanswered for 120 s, and a factory change waited 40 s
 * behind them. Now the work is budgeted before parsing, validate requests wait for a thread a bounded time, and
 * applies validate on a lane of their own: the apply finishes while the requests' lane is still busy, and
 * every anonymous request gets an answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DefinitionPool } from '../../src/definitions/pool.ts';
import { ERROR_CATALOGUE } from '../../src/kernel/errors.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { RUNNER } from '../support/factory-tree.ts';
import { createGitFactory } from '../factories/support.ts';
import { pollUntil } from '../support/signals.ts';

/** The attack's file: 20,000 keys, 240 KB (under the 256 KiB file cap; the attack's request was 278 KB). */
function keyBomb(): { path: string; content: string }[] {
  const lines = ['name: bomb', 'x:'];
  for (let i = 0; i < 20_000; i++) lines.push(`  k${String(i).padStart(5, '0')}: v`);
  return [{ path: 'factory.yaml', content: `${lines.join('\n')}\n` }];
}

/** Within every budget, and still seconds of work: ten files of 1,900 keys with long values, 2 MB in all. */
function heavy(): { path: string; content: string }[] {
  const files = [{ path: 'factory.yaml', content: 'name: heavy\n' }];
  for (let f = 0; f < 10; f++) {
    const lines = Array.from({ length: 1_900 }, (_, i) => `k${i}: ${'v'.repeat(90)}`);
    files.push({ path: `runners/r${f}.yaml`, content: `${lines.join('\n')}\n` });
  }
  return files;
}

describe.each(ENGINES.slice(0, 1))('hostile anonymous validation against a team apply on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  const validate = (files: unknown) =>
    request(`${s.apiUrl}/factory-files/validate`, { method: 'POST', body: { files } });

  it('refuses the 20,000-key file unparsed with FF_LIMIT_EXCEEDED naming the file', async () => {
    const bomb = keyBomb();
    expect(bomb[0]!.content.length).toBeGreaterThan(230_000);
    const res = await validate(bomb);
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.valid).toBe(false);
    expect(res.body.diagnostics).toContainEqual(
      expect.objectContaining({
        code: 'FF_LIMIT_EXCEEDED',
        path: 'factory.yaml',
        message: expect.stringMatching(/more than 5000 mapping keys; it is not parsed/),
      }),
    );
  });

  it('8 concurrent hostile validations: the apply is not queued behind them, and each gets an answer', async () => {
    const factory = await createGitFactory(s);
    const pool = s.server.services.definitions;
    const appliesBefore = pool.load('applies').completed;
    const bodies = [heavy(), keyBomb(), heavy(), keyBomb(), heavy(), keyBomb(), heavy(), keyBomb()];
    const storm = bodies.map((files) => validate(files));
    // The signal: the requests' lane is busy with them.
    await pollUntil(() => pool.load('requests').running > 0, {
      what: "the requests' lane to be busy (the pool's threads tell nothing)",
      timeoutMs: 30_000,
    });

    const revision = await factory.commit({ 'runners/extra.yaml': RUNNER }, 'add a runner');
    const synced = await factory.sync();
    expect(synced, JSON.stringify(synced).slice(0, 500)).toMatchObject({ result: 'applied' });
    expect(synced.revision ?? (await factory.status()).applied_revision).toBe(revision);
    // Finished while the requests' lane still had work: it did not wait behind it.
    const requests = pool.load('requests');
    expect(requests.running + requests.queued, JSON.stringify(requests)).toBeGreaterThan(0);
    expect(pool.load('applies').completed).toBeGreaterThan(appliesBefore);

    const answers = await Promise.all(storm);
    for (const [i, res] of answers.entries()) {
      const what = `request ${i}: ${res.status} ${res.text.slice(0, 200)}`;
      expect([200, 413, 422, 429, 503], what).toContain(res.status);
      if (res.status === 200) {
        expect(res.body.valid, what).toBe(false);
        if (i % 2 === 1)
          expect(
            res.body.diagnostics.map((d: { code: string }) => d.code),
            what,
          ).toContain('FF_LIMIT_EXCEEDED');
      } else {
        expect(Object.keys(ERROR_CATALOGUE), what).toContain(res.body.code);
        if (res.status === 429) expect(Number(res.headers.get('retry-after')), what).toBeGreaterThan(0);
      }
    }
  }, 120_000);
});

describe('the bounded wait of validate requests', () => {
  it('answers resource_unavailable to a request still waiting behind another past queueWaitMs', async () => {
    // one thread, a wait of 50 ms: the second request waits behind a validation of seconds
    const pool = new DefinitionPool({ timeoutMs: 30_000, memoryMb: 256, queueWaitMs: 50, threads: 1 });
    try {
      const body = (files: unknown) => Buffer.from(JSON.stringify({ files }));
      const first = pool.validateRequest(body(heavy()));
      await pollUntil(() => pool.load('requests').running === 1, {
        what: 'the first validation to run on the thread (the pool tells nothing)',
        everyMs: 5,
        timeoutMs: 30_000,
      });
      const second = pool.validateRequest(body(heavy()));
      await expect(second).rejects.toMatchObject({ code: 'resource_unavailable' });
      await expect(first).resolves.toBeDefined();
    } finally {
      await pool.close();
    }
  }, 60_000);
});
