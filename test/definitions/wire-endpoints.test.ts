import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { readFactoryDir, SCHEMA_VERSION, getSchemaBundle } from '../../src/definitions/index.ts';
import { documentFileName, matchesEtag } from '../../src/factories/factory-file-routes.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { tree } from './support.ts';

describe('factory-file wire helpers', () => {
  it('matches If-None-Match lists, weak tags and *', () => {
    expect(matchesEtag('"abc"', '"abc"')).toBe(true);
    expect(matchesEtag('W/"abc"', '"abc"')).toBe(true);
    expect(matchesEtag('"x", "abc"', '"abc"')).toBe(true);
    expect(matchesEtag('*', '"abc"')).toBe(true);
    expect(matchesEtag('"abd"', '"abc"')).toBe(false);
    expect(matchesEtag(undefined, '"abc"')).toBe(false);
  });

  it('names a document by kind, kind.json or kind.schema.json', () => {
    for (const name of ['agent', 'agent.json', 'agent.schema.json'])
      expect(documentFileName(name)).toBe('agent.schema.json');
  });
});

describe.each(ENGINES)('factory-file wire endpoints on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  const validate = (files: unknown, key?: string) =>
    request(`${s.apiUrl}/factory-files/validate`, {
      method: 'POST',
      body: { files },
      headers: key ? { authorization: `Bearer ${key}` } : {},
    });

  it('publishes the registry without an API key, with current_version and links that work', async () => {
    const registry = await request(`${s.apiUrl}/factory-files/schemas`);
    expect(registry.status).toBe(200);
    expect(registry.body.current_version).toBe(SCHEMA_VERSION);
    const version = registry.body.versions[0];
    expect(version.version).toBe(SCHEMA_VERSION);
    expect(version.url).toBe(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}`);
    expect(version.documents.map((d: { name: string }) => d.name)).toEqual(Object.keys(getSchemaBundle()).sort());
    for (const doc of version.documents) expect((await request(doc.url)).status).toBe(200);
  });

  it('answers the bundle and single documents with ETag; If-None-Match answers 304 with no body', async () => {
    const bundle = await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}`);
    expect(bundle.status).toBe(200);
    expect(bundle.body.schema_version).toBe(SCHEMA_VERSION);
    expect(bundle.body.documents).toEqual(getSchemaBundle());
    const etag = bundle.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(bundle.headers.get('cache-control')).toMatch(/public/);
    const again = await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}`, {
      headers: { 'if-none-match': etag },
    });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    const weak = await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}`, {
      headers: { 'if-none-match': `"other", W/${etag}` },
    });
    expect(weak.status).toBe(304);

    const doc = await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}/factory`);
    expect(doc.status).toBe(200);
    expect(doc.headers.get('content-type')).toMatch(/^application\/schema\+json/);
    expect(JSON.parse(doc.text)).toEqual(getSchemaBundle()['factory.schema.json']);
    const docEtag = doc.headers.get('etag')!;
    expect(docEtag).not.toBe(etag);
    expect(
      (
        await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}/factory.schema.json`, {
          headers: { 'if-none-match': docEtag },
        })
      ).status,
    ).toBe(304);
    expect(
      (
        await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}/factory.schema.json`, {
          headers: { 'if-none-match': '"stale"' },
        })
      ).status,
    ).toBe(200);
  });

  it('serves documents whose relative $refs resolve beside them (as a YAML language server loads them)', async () => {
    const ajv = new Ajv2020({ strict: false, loadSchema: async (uri) => JSON.parse((await request(uri)).text) });
    const url = `${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}/agent.schema.json`;
    const schema = JSON.parse((await request(url)).text);
    const validate = await ajv.compileAsync({ ...schema, $id: url });
    expect(validate({ agentType: 'FOREMAN' })).toBe(true);
    expect(validate({ agentType: 'NOPE' })).toBe(false);
  });

  it('answers 404 problems for an unknown version or document, naming what exists', async () => {
    const version = await request(`${s.apiUrl}/factory-files/schemas/v9`);
    expect(version.status).toBe(404);
    expect(version.body.detail).toContain(SCHEMA_VERSION);
    const doc = await request(`${s.apiUrl}/factory-files/schemas/${SCHEMA_VERSION}/nope`);
    expect(doc.status).toBe(404);
    expect(doc.body.detail).toContain('factory.schema.json');
  });

  it('validates a valid tree: valid, schema_version, scope, and the checks that need state listed', async () => {
    const files = await readFactoryDir(new URL('../../examples/token-webhook', import.meta.url).pathname);
    const res = await validate(files.map((f) => ({ path: f.path, content: f.content })));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      valid: true,
      schema_version: SCHEMA_VERSION,
      validation_scope: {
        parser: `agentyard/${SCHEMA_VERSION}`,
        state_independent: 'checked',
        state_dependent: 'not_checked',
      },
    });
    expect(res.body.diagnostics.filter((d: { severity: string }) => d.severity === 'error')).toEqual([]);
    expect(res.body.state_dependent_checks_not_run.length).toBeGreaterThan(0);
    for (const c of res.body.state_dependent_checks_not_run)
      expect(Object.keys(c).sort()).toEqual(['check', 'json_pointer', 'path', 'subject']);
  });

  it('reports diagnostics with code, path, line, column, message and severity', async () => {
    const files = tree({ 'agents/foreman/agent.md': '---\nagentType: FOREMAN\nmodle: x\n---\nLead.\n' });
    const res = await validate(files);
    expect(res.status).toBe(200);
    expect(res.body.valid).toBe(false);
    const d = res.body.diagnostics.find((x: { code: string }) => x.code === 'FF_UNKNOWN_FIELD');
    expect(d).toMatchObject({
      path: 'agents/foreman/agent.md',
      line: 3,
      column: 1,
      severity: 'error',
      json_pointer: '/modle',
    });
    expect(d.message).toMatch(/modle/);
  });

  it('runs the secret checks with a team key, and refuses a key that does not work', async () => {
    const webhook = 'authMode: url_token\nsecretName: hook-secret\n';
    const files = tree({ 'webhooks/deploys.yaml': webhook });
    const anonymous = await validate(files);
    expect(anonymous.body.state_dependent_checks_not_run.map((c: { check: string }) => c.check)).toContain(
      'secret_exists',
    );
    const keyed = await validate(files, s.adminKey);
    expect(keyed.status).toBe(200);
    expect(keyed.body.validation_scope.state_dependent).toBe('partially_checked');
    expect(keyed.body.valid).toBe(false);
    expect(keyed.body.diagnostics.map((d: { message: string }) => d.message).join('\n')).toMatch(/hook-secret/);
    await s.api('PUT', '/secrets/hook-secret', { value: 'url-safe_value' });
    const withSecret = await validate(files, s.adminKey);
    expect(withSecret.body.valid, JSON.stringify(withSecret.body.diagnostics)).toBe(true);
    expect(withSecret.body.state_dependent_checks_not_run.map((c: { check: string }) => c.check)).not.toContain(
      'secret_exists',
    );
    expect((await validate(files, 'ayk_wrong')).status).toBe(401);
  });

  it('enforces the caps: 256 files, 256 KiB per file, 2 MiB in all, with 413 FF_LIMIT_EXCEEDED naming the file', async () => {
    const many = Array.from({ length: 257 }, (_, i) => ({ path: `skills/s${i}/SKILL.md`, content: 'x' }));
    const tooMany = await validate(many);
    expect(tooMany.status).toBe(413);
    expect(tooMany.body.detail).toMatch(/at most 256 files/);
    expect(tooMany.body.diagnostics).toEqual([
      expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED', path: 'skills/s256/SKILL.md' }),
    ]);
    const big = await validate([...tree(), { path: 'agents/big/agent.md', content: 'x'.repeat(256 * 1024 + 1) }]);
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
    expect(big.body.detail).toMatch(/agents\/big\/agent\.md/);
    expect(big.body.diagnostics[0]).toMatchObject({ code: 'FF_LIMIT_EXCEEDED', path: 'agents/big/agent.md' });
    const total = Array.from({ length: 9 }, (_, i) => ({
      path: `skills/s${i}/SKILL.md`,
      content: 'x'.repeat(250 * 1024),
    }));
    const tooMuch = await validate(total);
    expect(tooMuch.status).toBe(413);
    expect(tooMuch.body.detail).toMatch(/2 MiB/);
    expect(tooMuch.body.diagnostics[0]).toMatchObject({ code: 'FF_LIMIT_EXCEEDED', path: 'skills/s8/SKILL.md' });
    const escape = await validate([{ path: '../etc/passwd', content: 'x' }]);
    expect(escape.status).toBe(400);
    expect(escape.body.detail).toMatch(/files\[0\]\.path/);
    const malformed = await request(`${s.apiUrl}/factory-files/validate`, {
      method: 'POST',
      body: { files: [{ path: 'factory.yaml' }] },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.detail).toMatch(/content/);
  });
});
