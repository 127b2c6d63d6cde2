import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderOpenApi } from '../../src/cli/openapi.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const COMMITTED = new URL('../../docs/openapi.json', import.meta.url);
const REGENERATE = 'npm run openapi   (= node bin/agentyard.js openapi --write docs/openapi.json)';

describe('the OpenAPI document', () => {
  let rendered: string;
  let s: TestServer;
  beforeAll(async () => {
    rendered = await renderOpenApi();
    s = await startTestServer('pglite');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('is committed and up to date in docs/openapi.json', () => {
    let committed = '';
    try {
      committed = readFileSync(COMMITTED, 'utf8');
    } catch {
      // reported below
    }
    // Compare as text: a stale copy must fail however small the difference.
    expect(committed === rendered, `docs/openapi.json is stale or missing; regenerate it with: ${REGENERATE}`).toBe(
      true,
    );
  });

  it('renders the same text every time', async () => {
    expect(await renderOpenApi()).toBe(rendered);
  });

  it('is OpenAPI 3.1 with a tag and a summary on every operation', () => {
    const doc = JSON.parse(rendered) as {
      openapi: string;
      paths: Record<string, Record<string, { tags?: string[]; summary?: string }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    const untitled: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        if (!op.tags?.length || !op.summary) untitled.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(untitled, 'give these routes schema.tags and schema.summary').toEqual([]);
    expect(Object.keys(doc.paths)).toContain('/agent/runs');
  });

  it('is served at /api/v1/openapi.json without a key, with the same operations', async () => {
    const served = await request(`${s.apiUrl}/openapi.json`);
    expect(served.status).toBe(200);
    const doc = JSON.parse(rendered) as { paths: Record<string, object> };
    const ops = (paths: Record<string, object>) =>
      Object.entries(paths)
        .flatMap(([p, o]) => Object.keys(o).map((m) => `${m} ${p}`))
        .sort();
    expect(ops(served.body.paths)).toEqual(ops(doc.paths));
  });
});
