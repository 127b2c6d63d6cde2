import { readFileSync, readdirSync } from 'node:fs';
import { DIAGNOSTIC_CODES } from '../../src/definitions/codes.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/kernel/errors.ts';
import { ERROR_TYPE_BASE } from '../../src/kernel/problem.ts';
import { AppError } from '../../src/kernel/errors.ts';
import type { ErrorCode } from '../../src/kernel/errors.ts';
import type { RoutePlugin } from '../../src/plugin.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { ApiResponse, TestServer } from '../support/server.ts';

const DOC = new URL('../../docs/errors.md', import.meta.url);

interface DocRow {
  code: string;
  status: number;
  title: string;
  retryable: boolean;
  when: string;
}

function documentedCodes(): DocRow[] {
  const rows: DocRow[] = [];
  for (const line of readFileSync(DOC, 'utf8').split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const code = /`([a-z_]+)`/.exec(cells[1] ?? '')?.[1];
    if (!code || cells.length < 7 || !/^\d{3}$/.test(cells[2]!)) continue;
    rows.push({ code, status: Number(cells[2]), title: cells[3]!, retryable: cells[4] === 'yes', when: cells[5]! });
  }
  return rows;
}

describe('the error catalogue and docs/errors.md', () => {
  it('list exactly the same codes, with the same status, title and retryability, each with an explanation', () => {
    const documented = documentedCodes();
    const catalogue = Object.entries(ERROR_CATALOGUE).map(([code, spec]) => ({
      code,
      status: spec.status,
      title: spec.title,
      retryable: spec.retryable,
    }));
    expect(
      documented.map(({ when: _when, ...rest }) => rest),
      'docs/errors.md must list every code of src/kernel/errors.ts, in order',
    ).toEqual(catalogue);
    for (const row of documented) expect(row.when.length, `explain when ${row.code} is answered`).toBeGreaterThan(10);
  });

  it('give every documented code an anchor that the problem type points at', () => {
    const text = readFileSync(DOC, 'utf8');
    for (const code of Object.keys(ERROR_CATALOGUE)) expect(text).toContain(`<a id="${code}"></a>\`${code}\``);
    expect(ERROR_TYPE_BASE).toMatch(/errors#$/);
  });

  it('list every FF_* diagnostic code of src/definitions/codes.ts, in order, with its meaning', () => {
    const rows: [string, string][] = [];
    for (const line of readFileSync(DOC, 'utf8').split('\n')) {
      const m = /^\| <a id="(FF_[A-Z_]+)"><\/a>`\1` \| (.+) \|$/.exec(line);
      if (m) rows.push([m[1]!, m[2]!]);
    }
    expect(rows).toEqual(Object.entries(DIAGNOSTIC_CODES));
  });

  it('give one example per FF_* code, each what the validator prints for a test tree', () => {
    const text = readFileSync(DOC, 'utf8');
    const block = text.slice(text.indexOf('```text', text.indexOf('## Factory-file diagnostics')));
    const examples = block.slice(8, block.indexOf('```', 8)).trim().split('\n');
    expect(examples.map((e) => /^\S[^:]*:\d+:\d+: (?:error|warning) (FF_[A-Z_]+): /.exec(e)?.[1])).toEqual(
      Object.keys(DIAGNOSTIC_CODES),
    );
    const cases = new URL('../definitions/fixtures/cases/', import.meta.url);
    const printed = readdirSync(cases)
      .map((dir) => readFileSync(new URL(`${dir}/expected.txt`, cases), 'utf8'))
      .join('\n')
      .split('\n');
    for (const example of examples) expect(printed, 'docs/errors.md example').toContain(example);
  });

  it('uses only documented codes in the sources', () => {
    // AppError takes an ErrorCode, so the type checker covers this; the test keeps a literal code honest at runtime.
    for (const code of Object.keys(ERROR_CATALOGUE) as ErrorCode[])
      expect(new AppError(code).status).toBe(ERROR_CATALOGUE[code].status);
  });
});

/** Routes that throw on purpose, to see the answers of errors no real route produces on demand. */
const probePlugin: RoutePlugin = {
  name: 'error-probes',
  async api(app) {
    app.get('/test-errors/:code', async (req) => {
      throw new AppError((req.params as { code: ErrorCode }).code, 'probe');
    });
    app.get('/test-errors-crash', async () => {
      throw new Error('database password is hunter2');
    });
  },
};

const MEMBERS = ['type', 'title', 'status', 'error', 'code', 'detail', 'instance', 'retryable', 'trace_id'];

function expectProblem(res: ApiResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  for (const member of MEMBERS) expect(res.body, `member ${member}`).toHaveProperty(member);
  expect(res.body).toMatchObject({
    status,
    code,
    type: `${ERROR_TYPE_BASE}${code}`,
    title: ERROR_CATALOGUE[code as ErrorCode].title,
  });
  expect(res.body.retryable).toBe(ERROR_CATALOGUE[code as ErrorCode].retryable);
  expect(res.body.trace_id).toMatch(/^[0-9a-f]{32}$/);
  expect(res.body.error).toBe(
    res.body.detail === res.body.title ? res.body.title : `${res.body.title} (${res.body.detail})`,
  );
}

describe.each(ENGINES)('HTTP errors on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine, { compose: { plugins: [probePlugin] } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers every catalogued code as a complete problem document', async () => {
    for (const code of Object.keys(ERROR_CATALOGUE)) {
      const res = await s.api('GET', `/test-errors/${code}`);
      expectProblem(res, ERROR_CATALOGUE[code as ErrorCode].status, code);
      expect(res.body).toMatchObject({ detail: 'probe', instance: `/api/v1/test-errors/${code}` });
    }
  });

  it('sends x-should-retry: false on non-retryable 409 and 5xx answers only', async () => {
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      const res = await s.api('GET', `/test-errors/${code}`);
      const expected = !spec.retryable && (spec.status === 409 || spec.status >= 500) ? 'false' : null;
      expect(res.headers.get('x-should-retry'), code).toBe(expected);
    }
  });

  it('answers an unknown route with 404 route_not_found, under the API and at the root', async () => {
    expectProblem(await s.api('GET', '/agent/nothing-here'), 404, 'route_not_found');
    expectProblem(await request(`${s.url}/nothing`), 404, 'route_not_found');
    // Unknown routes answer 404 before authentication: there is nothing to protect.
    expectProblem(await request(`${s.apiUrl}/nothing`), 404, 'route_not_found');
  });

  it('answers a known path with the wrong method with 405 and Allow', async () => {
    const res = await s.api('DELETE', '/agent/runs');
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, POST');
    const one = await s.api('PATCH', '/agent/runs/run_x');
    expectProblem(one, 405, 'method_not_allowed');
    expect(one.headers.get('allow')).toBe('GET');
  });

  it('serves the documentation the problem type points at, with an anchor for every code', async () => {
    const problem = await s.api('GET', '/agent/runs/run_missing');
    const page = await fetch(new URL(problem.body.type, `${s.apiUrl}/agent/runs/run_missing`));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    for (const code of [...Object.keys(ERROR_CATALOGUE), ...Object.keys(DIAGNOSTIC_CODES)])
      expect(html).toContain(`id="${code}"`);
    expect(html).toContain('<code>resource_not_found</code>');
    expect(html).not.toContain('<script');
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    for (const body of ['{"prompt": ', '{prompt: 1}', 'nul']) {
      expectProblem(await s.api('POST', '/agent/runs', body), 400, 'invalid_json');
    }
  });

  it('takes an empty body with Content-Type: application/json as no body (the Python client on cancel)', async () => {
    const run = await s.api('POST', '/agent/runs', { prompt: 'x' });
    const res = await request(`${s.apiUrl}/agent/runs/${run.body.run_id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    // And without any content type (the TypeScript client).
    const run2 = await s.api('POST', '/agent/runs', { prompt: 'x' });
    const res2 = await fetch(`${s.apiUrl}/agent/runs/${run2.body.run_id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}` },
    });
    expect(res2.status).toBe(200);
  });

  it('answers a body over 4 MiB with 413 payload_too_large', async () => {
    const res = await s.api('POST', '/agent/runs', { prompt: 'x'.repeat(4 * 1024 * 1024 + 10) });
    expectProblem(res, 413, 'payload_too_large');
  });

  it('answers a body in another content type with 415', async () => {
    const res = await request(`${s.apiUrl}/agent/runs`, {
      method: 'POST',
      body: 'prompt=x',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('answers 401 problems for a missing or wrong key', async () => {
    expectProblem(await request(`${s.apiUrl}/agent/runs`), 401, 'authentication_required');
    expectProblem(await s.api('GET', '/agent/runs', undefined, 'ayk_nope'), 401, 'authentication_required');
  });

  it('names the field of a validation error', async () => {
    const res = await s.api('POST', '/agent/runs', { prompt: 'x', config: { idle_timeout_minutes: 'x' } });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.detail).toBe('body.config.idle_timeout_minutes must be integer');
    const query = await s.api('GET', '/agent/runs?limit=900');
    expect(query.body.detail).toBe('querystring.limit must be <= 500');
  });

  it('hides the cause of an unexpected failure: 500 internal_error, retryable, found in the log by trace_id', async () => {
    const res = await s.api('GET', '/test-errors-crash');
    expectProblem(res, 500, 'internal_error');
    expect(res.text).not.toContain('hunter2');
    expect(res.headers.get('x-should-retry')).toBeNull();
  });

  it("uses the trace id of the caller's traceparent header", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await s.api('GET', '/agent/runs/run_missing', undefined, undefined, {
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
    });
    expect(res.body.trace_id).toBe(traceId);
    const invalid = await s.api('GET', '/agent/runs/run_missing', undefined, undefined, {
      traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
    });
    expect(invalid.body.trace_id).not.toBe('0'.repeat(32));
  });
});
