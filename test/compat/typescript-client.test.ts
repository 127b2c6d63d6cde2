/**
 * The official TypeScript client (`oz-agent-sdk` from npm: the devDependency, 1.0.0-alpha.8, and the newest
 * version npm has) against a live server, configured only with the base URL and the key. Reaching npm is
 * part of the test: without it the test fails, it never skips.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as bundled from 'oz-agent-sdk';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { newestNpmClient } from './support.ts';

type Sdk = typeof import('oz-agent-sdk');

interface ClientUnderTest {
  label: string;
  sdk: Sdk;
}

interface RunLike {
  run_id: string;
  state: string;
  title: string;
}

/** All runs of a list query: the client's own iterator when it has one (1.1+), else the cursor by hand (α8). */
async function listAll(
  client: InstanceType<Sdk['OzAPI']>,
  query: Record<string, unknown>,
): Promise<{ ids: string[]; pages: number }> {
  const first = client.agent.runs.list(query as never) as unknown;
  if (first && typeof first === 'object' && Symbol.asyncIterator in first) {
    const ids: string[] = [];
    for await (const run of first as AsyncIterable<RunLike>) ids.push(run.run_id);
    return { ids, pages: -1 };
  }
  const ids: string[] = [];
  let pages = 0;
  let cursor: string | undefined;
  do {
    const page = (await client.agent.runs.list({ ...query, ...(cursor ? { cursor } : {}) } as never)) as unknown as {
      runs: RunLike[];
      page_info: { has_next_page: boolean; next_cursor?: string };
    };
    ids.push(...page.runs.map((r) => r.run_id));
    cursor = page.page_info.has_next_page ? page.page_info.next_cursor : undefined;
    pages++;
  } while (cursor);
  return { ids, pages };
}

describe.each(ENGINES)('official TypeScript client against a live server on %s', (engine) => {
  let s: TestServer;
  const clients: ClientUnderTest[] = [];
  beforeAll(async () => {
    const newest = await newestNpmClient();
    const bundledVersion = (await import('oz-agent-sdk/version')).VERSION;
    clients.push({ label: `${bundledVersion} (devDependency)`, sdk: bundled });
    if (newest.version !== bundledVersion)
      clients.push({ label: `${newest.version} (newest on npm)`, sdk: newest.module });
    s = await startTestServer(engine);
  }, 600_000);
  afterAll(async () => {
    await s?.close();
  });

  it('runs the scenario with every client version', async () => {
    expect(clients.length).toBeGreaterThan(0);
    for (const { label, sdk } of clients) {
      const tag = `${engine}-${label.split(' ')[0]}`;
      const client = new sdk.OzAPI({ baseURL: s.apiUrl, apiKey: s.adminKey });

      // create (α8 posts to /agent/run) with the legacy `images` member, and retrieve
      const created = await client.agent.run({
        prompt: `TS compat ${tag}`,
        config: {
          name: `ts-${tag}`,
          model_id: 'model-t',
          mcp_servers: { docs: { url: 'https://mcp.example.com/sse' } },
        },
        images: [{ data: Buffer.from('fake png').toString('base64'), mime_type: 'image/png' }],
      } as never);
      expect(created.state, label).toBe('QUEUED');
      const run = await client.agent.runs.retrieve(created.run_id);
      expect(run).toMatchObject({
        run_id: created.run_id,
        task_id: created.run_id,
        title: `TS compat ${tag}`,
        state: 'QUEUED',
        source: 'API',
      });
      expect(run.agent_config).toMatchObject({ name: `ts-${tag}`, model_id: 'model-t' });
      expect(run.creator?.type).toBe('user');

      // list with filters across several pages
      const pageIds: string[] = [];
      for (let i = 0; i < 11; i++)
        pageIds.push(
          (await client.agent.run({ prompt: `page ${i}`, config: { name: `pages-${tag}`, model_id: 'm-p' } })).run_id,
        );
      const { ids, pages } = await listAll(client, { name: `pages-${tag}`, limit: 4 });
      expect(new Set(ids)).toEqual(new Set(pageIds));
      expect(ids.length).toBe(11);
      if (pages !== -1) expect(pages).toBe(3);
      const filtered = await listAll(client, {
        name: `pages-${tag}`,
        state: ['QUEUED', 'INPROGRESS'],
        model_id: 'm-p',
        created_after: new Date(Date.now() - 3_600_000).toISOString(),
        source: 'API',
        q: 'page 1',
        limit: 100,
      });
      expect(filtered.ids.length).toBe(2); // "page 1" and "page 10"

      // cancel answers the bare id (application/json string)
      const cancelled = await client.agent.runs.cancel(pageIds[0]!);
      expect(cancelled).toBe(pageIds[0]);
      expect((await client.agent.runs.retrieve(pageIds[0]!)).state).toBe('CANCELLED');

      // error classes
      const badKey = new sdk.OzAPI({ baseURL: s.apiUrl, apiKey: 'ayk_not-a-key', maxRetries: 0 });
      await expect(badKey.agent.runs.list()).rejects.toBeInstanceOf(sdk.AuthenticationError);
      const notFound = await client.agent.runs.retrieve('run_nope').catch((e: unknown) => e);
      expect(notFound).toBeInstanceOf(sdk.NotFoundError);
      expect((notFound as InstanceType<Sdk['NotFoundError']>).status).toBe(404);
      expect((notFound as { error: { code: string } }).error.code).toBe('resource_not_found');
      await expect(client.agent.runs.cancel(pageIds[0]!)).rejects.toBeInstanceOf(sdk.BadRequestError);
      await expect(client.agent.run({ prompt: '' })).rejects.toBeInstanceOf(sdk.BadRequestError);
      await expect(client.agent.runs.list({ limit: 501 } as never)).rejects.toBeInstanceOf(sdk.BadRequestError);

      // GET /agent
      const agents = await client.agent.list();
      expect(Array.isArray(agents.agents)).toBe(true);

      // the `images` member became an attachment of the run
      const attachments = await s.api('GET', `/agent/runs/${created.run_id}/handoff/attachments`);
      expect(attachments.body.attachments.map((a: { filename: string }) => a.filename)).toEqual(['image-1.png']);
    }
  });

  it('reads OZ_API_BASE_URL and WARP_API_KEY from the environment', async () => {
    const saved = { base: process.env.OZ_API_BASE_URL, key: process.env.WARP_API_KEY };
    process.env.OZ_API_BASE_URL = s.apiUrl;
    process.env.WARP_API_KEY = s.adminKey;
    try {
      const client = new bundled.OzAPI();
      const created = await client.agent.run({ prompt: 'from the environment' });
      expect((await client.agent.runs.retrieve(created.run_id)).prompt).toBe('from the environment');
    } finally {
      for (const [name, value] of [
        ['OZ_API_BASE_URL', saved.base],
        ['WARP_API_KEY', saved.key],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
