/**
 * A client that goes away during `wait_for_runs` (the real MCP client SDK over loopback HTTP): the server releases
 * the wait at once — no bus subscription, timer loop or database listener left behind — the run tree is
 * unaffected (both runs still at work, the child's report still waiting for the parent), and the next call with
 * the same token works and hands the report over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_EVENTS_TOPIC } from '../../src/kernel/topics.ts';
import { ENGINES } from '../support/db.ts';
import type { TestServer } from '../support/server.ts';
import { eventsOf, waitForState, whenRunsTold } from '../execution/support.ts';
import { pollUntil } from '../support/signals.ts';
import {
  AGENT_FILES,
  callTool,
  heldParentToken,
  managedFactory,
  mcpClient,
  startMcpServer,
  usePlaybook,
} from './support.ts';

const FILES = {
  ...AGENT_FILES,
  'factory.yaml': `schemaVersion: v1alpha1
name: Waits
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: default
`,
};

usePlaybook({
  // the parent's agent stays at work: the test speaks for it with its execution's token
  hold: { default: [{ sleep: 300 }] },
  reporter: { default: [{ call: 'report', args: { text: 'half done' } }, { sleep: 300 }] },
});

describe.each(ENGINES)('a client gone during wait_for_runs on %s', (engine) => {
  let s: TestServer;
  let factoryId: string;

  beforeAll(async () => {
    s = await startMcpServer(engine);
    factoryId = await managedFactory(s, 'waits', FILES);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('releases the wait, leaves the run tree as it was, and the next call works', async () => {
    const { parentId, token } = await heldParentToken(s, factoryId);

    const first = await mcpClient(s, token);
    const dispatched = await callTool(first, 'dispatch_agent', { agent: 'implement', prompt: 'PLAYBOOK=reporter' });
    expect(dispatched.isError, dispatched.text).toBe(false);
    const childId = dispatched.data.run_id as string;
    await first.close();
    await whenRunsTold(s, 'the child report', async () =>
      (await eventsOf(s, parentId)).some((e) => e.type === 'report' && e.data.from_run_id === childId),
    );

    const { bus, db } = s.server.ctx;
    const iface = s.server.services.factoryInterface;
    const subscribers = bus.subscriberCount(RUN_EVENTS_TOPIC);
    const listen = db.listen.bind(db);
    let listens = 0;
    db.listen = (channel, onPayload) => {
      listens++;
      return listen(channel, onPayload);
    };
    try {
      const waiter = await mcpClient(s, token);
      const call = waiter.callTool({ name: 'wait_for_runs', arguments: { run_ids: [childId], timeout_seconds: 300 } });
      const outcome = call.then(
        () => 'answered',
        () => 'rejected',
      );
      await pollUntil(
        async () =>
          iface.waiting === 1 && bus.subscriberCount(RUN_EVENTS_TOPIC) === subscribers + 1 ? true : undefined,
        { what: 'the server to be waiting' },
      );

      // the client goes away mid-call: its transport aborts the HTTP request
      await waiter.close();
      expect(await outcome).toBe('rejected');
      await pollUntil(
        async () => (iface.waiting === 0 && bus.subscriberCount(RUN_EVENTS_TOPIC) === subscribers ? true : undefined),
        { what: 'the wait to be released' },
      );
      // released for good, not between two rounds of its loop: a change of the child wakes nobody up again
      await bus.publish(RUN_EVENTS_TOPIC, { run_ids: [childId] });
      expect(iface.waiting).toBe(0);
      expect(bus.subscriberCount(RUN_EVENTS_TOPIC)).toBe(subscribers);
      expect(listens).toBe(0);
    } finally {
      db.listen = listen;
    }

    // the tree is as it was: both runs at work, the child's report not handed to an answer nobody read
    const runs = await s.server.ctx.db.query<{ id: string; state: string }>(
      'SELECT id, state FROM runs WHERE id = ANY($1::text[]) ORDER BY id',
      [[parentId, childId]],
    );
    expect(Object.fromEntries(runs.rows.map((r) => [r.id, r.state]))).toEqual({
      [parentId]: 'INPROGRESS',
      [childId]: 'INPROGRESS',
    });
    expect((await eventsOf(s, parentId)).filter((e) => e.type === 'followup').map((e) => e.data)).toEqual([]);

    // the next call, with the same token, works and hands the report over
    const again = await mcpClient(s, token);
    try {
      const waited = await callTool(again, 'wait_for_runs', { run_ids: [childId], timeout_seconds: 0 });
      expect(waited.isError, waited.text).toBe(false);
      expect(waited.data.all_ended).toBe(false);
      expect(waited.data.runs).toMatchObject([{ run_id: childId, state: 'INPROGRESS', parent_run_id: parentId }]);
      expect(waited.data.reports).toEqual([{ from_run_id: childId, text: expect.stringContaining('half done') }]);
    } finally {
      await again.close();
    }
    expect(iface.waiting).toBe(0);
    expect(bus.subscriberCount(RUN_EVENTS_TOPIC)).toBe(subscribers);
    expect((await s.api('POST', `/agent/runs/${parentId}/cancel`)).status).toBe(200);
    await waitForState(s, childId, ['CANCELLED']);
  });
});
