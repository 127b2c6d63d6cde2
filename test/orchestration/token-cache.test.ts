/**
 * A run token this process has checked for a dispatch is not checked again by a statement of its own: the child's
 * insert checks it (token-cache.ts, the dispatch guard of functions.sql). Through the real MCP client SDK: later
 * dispatches work, the limits still hold (refused with the reason), and once the run is cancelled its token is
 * refused at once (401) and creates nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import type { TestServer } from '../support/server.ts';
import { waitForState } from '../execution/support.ts';
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
name: Cached
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: default
`,
};

usePlaybook({ hold: { default: [{ sleep: 300 }] }, done: { default: [{ result: 'done' }] } });

describe.each(ENGINES)('a run token checked by the insert on %s', (engine) => {
  let s: TestServer;
  let factoryId: string;

  beforeAll(async () => {
    s = await startMcpServer(engine, { limits: { maxChildren: 3 } });
    factoryId = await managedFactory(s, 'cached', FILES);
  });
  afterAll(async () => {
    await s?.close();
  });

  const childrenOf = async (parentId: string) =>
    (await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE parent_run_id = $1', [parentId])).rows;

  it('dispatches with a known token, keeps the limits, and refuses it at once when its run ends', async () => {
    const { parentId, token } = await heldParentToken(s, factoryId);

    const db = s.server.ctx.db;
    const query = db.query.bind(db);
    let tokenChecks = 0;
    db.query = ((text: string, params?: never) => {
      if (text.includes('FROM run_tokens t')) tokenChecks++;
      return query(text, params);
    }) as typeof db.query;
    const client = await mcpClient(s, token);
    try {
      // the first dispatch checks the token with its statement; the next ones leave it to the insert
      for (let i = 0; i < 3; i++) {
        const before = tokenChecks;
        const answer = await callTool(client, 'dispatch_agent', { agent: 'implement', prompt: `PLAYBOOK=done ${i}` });
        expect(answer.isError, answer.text).toBe(false);
        expect(answer.data.parent_run_id).toBe(parentId);
        expect(tokenChecks - before).toBe(i === 0 ? 1 : 0);
      }
      expect(await childrenOf(parentId)).toHaveLength(3);
      const over = await callTool(client, 'dispatch_agent', { agent: 'implement', prompt: 'PLAYBOOK=done 4' });
      expect(over).toMatchObject({ isError: true });
      expect(over.text).toContain(`run ${parentId} has started 3 children, its limit (AGENTYARD_RUN_MAX_CHILDREN 3)`);
      const unknown = await callTool(client, 'dispatch_agent', { agent: 'nobody', prompt: 'x' });
      expect(unknown).toMatchObject({ isError: true });
      expect(unknown.text).toContain('no agent "nobody"');
      expect(await childrenOf(parentId)).toHaveLength(3);

      // the run ends: the same token, still known to the process, is refused at once and creates nothing
      expect((await s.api('POST', `/agent/runs/${parentId}/cancel`)).status).toBe(200);
      await waitForState(s, parentId, ['CANCELLED']);
      await expect(
        client.callTool({ name: 'dispatch_agent', arguments: { agent: 'implement', prompt: 'PLAYBOOK=done late' } }),
      ).rejects.toThrow(/401/);
      await expect(
        client.callTool({ name: 'dispatch_agent', arguments: { agent: 'implement', prompt: 'PLAYBOOK=done later' } }),
      ).rejects.toThrow(/401/);
      expect(await childrenOf(parentId)).toHaveLength(3);
    } finally {
      db.query = query;
      await client.close().catch(() => {});
    }
  });
});
