/**
 * Parent and child runs: a cancel reaches the whole tree below the run (any depth), in one statement of the
 * run engine, and announces each run it moved; runs of other trees and finished runs stay as they are.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_CHANGED_TOPIC } from '../../src/kernel/topics.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('run trees on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('cancels a run with its children and grandchildren, and announces each', async () => {
    const root = await s.api('POST', '/agent/runs', { prompt: 'the foreman' });
    expect(root.status, root.text).toBe(200);
    const rootId = root.body.run_id as string;
    const teamId = (
      await s.server.ctx.db.query<{ team_id: string }>('SELECT team_id FROM runs WHERE id = $1', [rootId])
    ).rows[0]!.team_id;
    const runs = s.server.services.runs;
    const child = async (parentRunId: string, prompt: string) =>
      (await runs.create({ teamId, prompt, source: 'API', creator: null, parentRunId })).run.id;
    const a = await child(rootId, 'child a');
    const b = await child(rootId, 'child b');
    const grandchild = await child(a, 'grandchild of a');
    const other = (await s.api('POST', '/agent/runs', { prompt: 'another tree' })).body.run_id as string;
    const otherChild = await child(other, 'child of another tree');

    const announced = new Set<string>();
    const off = s.server.ctx.bus.subscribe(RUN_CHANGED_TOPIC, (data) => {
      if (data.state === 'CANCELLED') announced.add(data.run_id);
    });
    try {
      const cancelled = await s.api('POST', `/agent/runs/${rootId}/cancel`);
      expect(cancelled.status, cancelled.text).toBe(200);
      expect([...announced].sort()).toEqual([rootId, a, b, grandchild].sort());
    } finally {
      off();
    }
    const state = async (id: string) => (await s.api('GET', `/agent/runs/${id}`)).body;
    expect((await state(rootId)).state).toBe('CANCELLED');
    for (const id of [a, b, grandchild]) {
      const run = await state(id);
      expect(run.state).toBe('CANCELLED');
      expect(run.status_message.message).toBe(`Cancelled with its ancestor ${rootId}`);
    }
    expect((await state(other)).state).toBe('QUEUED');
    expect((await state(otherChild)).state).toBe('QUEUED');
    // The tree is cancelled once: a second cancel is refused as for any finished run.
    expect((await s.api('POST', `/agent/runs/${rootId}/cancel`)).status).toBe(400);
  });
});
