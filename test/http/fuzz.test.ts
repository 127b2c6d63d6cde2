/**
 * Property-based fuzzing of the HTTP edges (issue 24): the webhook ingress (path, headers, body), the Run API
 * (list query, create body) and factory files through the validate endpoint. Every answer is below 500, every
 * refusal a problem document with a catalogued code, and the server keeps answering. Bounded: a fixed number
 * of runs per property (AGENTYARD_FUZZ_RUNS, default 100; AGENTYARD_FUZZ_SEED replays a failure), on one
 * engine (the edges do not depend on it).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/kernel/errors.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { send, seedWebhook } from '../ingress/support.ts';
import type { RawResponse, SeededWebhook } from '../ingress/support.ts';

const RUNS = Number(process.env.AGENTYARD_FUZZ_RUNS ?? 100);
const SEED = process.env.AGENTYARD_FUZZ_SEED ? Number(process.env.AGENTYARD_FUZZ_SEED) : undefined;
/** At most 10 s per property on a slow machine: fewer runs then, never a timeout. */
const PROPERTY_OPTIONS = {
  numRuns: RUNS,
  interruptAfterTimeLimit: 10_000,
  ...(SEED !== undefined ? { seed: SEED } : {}),
};

/** Below 500; a refusal is a problem document whose code is in the catalogue and whose status matches. */
function expectWellFormed(res: RawResponse, what: string): void {
  expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).toBeLessThan(500);
  if (res.status < 400) return;
  expect(String(res.headers['content-type']), what).toMatch(/^application\/problem\+json/);
  const body = res.body as { code?: string; status?: number };
  expect(Object.keys(ERROR_CATALOGUE), `${what}: ${res.text.slice(0, 300)}`).toContain(body?.code);
  expect(body.status, what).toBe(res.status);
}

/** A character PostgreSQL cannot store or that is not Unicode text. */
const poison = fc.constantFrom('\0', '\uD800', '\uDBFF', '\uDC00', '\uDFFF');

/** Text a hostile client would send: mostly plain, often with NUL or a lone surrogate inside. */
const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
  {
    weight: 3,
    arbitrary: fc.tuple(fc.string({ maxLength: 10 }), poison, fc.string({ maxLength: 10 })).map((p) => p.join('')),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 20, unit: 'binary' }) },
  {
    weight: 1,
    arbitrary: fc.string({
      maxLength: 10,
      unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('0000-01-01', '10000-01-01', '+275760-09-13T00:00:00Z', '%00', '../..', '1e999', 'null'),
  },
);

/** JSON text that may be invalid, deep, or hold strings JSON.stringify writes as escapes. */
const jsonishText = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc.anything({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'undefined'),
  fc.integer({ min: 1, max: 3000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 1, max: 3000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  fc.string({ maxLength: 60 }),
);

/** A path segment: safe characters, percent-escapes of any byte, and encoded Unicode. */
const pathSegment = fc
  .array(
    fc.oneof(
      fc.constantFrom(..."abcXYZ019-._~!$&'()*+,;=:@".split('')),
      fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`),
      fc.constantFrom('%', '%G0', '%ED%A0%80', '%F0%9F%98%80', '..', '%2F'),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.join(''));

/** A query string of the list filters (and a few others), each value hostile and percent-encoded or raw. */
const LIST_PARAMS = [
  'limit',
  'cursor',
  'sort_by',
  'sort_order',
  'state',
  'name',
  'config_name',
  'model_id',
  'creator',
  'source',
  'execution_location',
  'created_after',
  'created_before',
  'updated_after',
  'environment_id',
  'skill',
  'schedule_id',
  'ancestor_run_id',
  'artifact_type',
  'q',
  'factory_id',
  'automation_id',
  'executor',
  'worker_host',
  'metadata[team]',
];
/** Parameters whose values reach the database as text or timestamps (the others are enums and numbers). */
const FREE_PARAMS = [
  'name',
  'model_id',
  'creator',
  'q',
  'skill',
  'created_after',
  'updated_after',
  'worker_host',
  'metadata[team]',
];
const queryString = fc
  .array(
    fc.tuple(
      fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...FREE_PARAMS) }, fc.constantFrom(...LIST_PARAMS), pathSegment),
      fc.oneof(
        // encodeURIComponent refuses lone surrogates: they go as the bytes a sender would put (CESU-8).
        hostileString.map((v) =>
          v
            .split(/([\uD800-\uDFFF])/)
            .map((part, i) => (i % 2 === 1 ? '%ED%A0%80' : encodeURIComponent(part)))
            .join(''),
        ),
        pathSegment,
      ),
    ),
    { maxLength: 6 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

/** Run requests of the right shape whose strings are hostile (a wrong shape stops at the schema, before the database). */
const wellShapedRunBody = fc.record(
  {
    prompt: hostileString,
    title: hostileString,
    parent_run_id: hostileString,
    conversation_id: hostileString,
    agent_identity_uid: hostileString,
    metadata: fc.dictionary(fc.oneof(fc.constantFrom('team', 'ticket'), hostileString), hostileString, { maxKeys: 3 }),
    attachments: fc.array(
      fc.record({ file_name: hostileString, mime_type: hostileString, data: fc.base64String({ maxLength: 40 }) }),
      { maxLength: 2 },
    ),
    config: fc.record(
      {
        name: hostileString,
        model_id: hostileString,
        base_prompt: hostileString,
        environment_id: hostileString,
        worker_host: hostileString,
        skill_spec: hostileString.map((v) => `repo:${v}`),
        harness: fc.record({ type: hostileString, model_id: hostileString }, { requiredKeys: [] }),
        harness_auth_secrets: fc.record({ claude_auth_secret_name: hostileString }, { requiredKeys: [] }),
        mcp_servers: fc.dictionary(
          hostileString,
          fc.record({ command: hostileString, args: fc.array(hostileString, { maxLength: 3 }) }),
          { maxKeys: 2 },
        ),
        future_member: fc.jsonValue({ maxDepth: 3 }),
      },
      { requiredKeys: [] },
    ),
    future_member: fc.anything({ maxDepth: 2 }),
  },
  { requiredKeys: ['prompt'] },
);

/** Anything at all in a run request's members. */
const anyRunBody = fc.dictionary(
  fc.constantFrom('prompt', 'title', 'config', 'metadata', 'attachments', 'images', 'mode', 'skill', 'team'),
  fc.anything({ maxDepth: 3 }),
);

/** The files of the base fixture factory, as the validate endpoint takes them. */
function fixtureFiles(): { path: string; content: string }[] {
  const root = new URL('../definitions/fixtures/base/', import.meta.url).pathname;
  const files: { path: string; content: string }[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else files.push({ path: path.relative(root, full), content: readFileSync(full, 'utf8') });
    }
  };
  walk(root);
  return files;
}

/** One edit of a file tree: a slice of a file replaced, a file renamed, or a file added. */
const treeEdit: fc.Arbitrary<TreeEdit> = fc.oneof(
  fc.record({
    kind: fc.constant('splice' as const),
    at: fc.nat(),
    drop: fc.nat({ max: 40 }),
    text: fc.oneof(
      hostileString,
      fc.constantFrom(': [', '- ', '\n  ', '---\n', '&a *a', '!!binary', '"\\u', '{{ x }}', '\t'),
    ),
  }),
  fc.record({ kind: fc.constant('rename' as const), to: fc.oneof(pathSegment, hostileString) }),
  fc.record({ kind: fc.constant('add' as const), path: fc.oneof(pathSegment, hostileString), content: jsonishText }),
);

type TreeEdit =
  | { kind: 'splice'; at: number; drop: number; text: string }
  | { kind: 'rename'; to: string }
  | { kind: 'add'; path: string; content: string };

function applyEdits(
  files: readonly { path: string; content: string }[],
  picks: number[],
  edits: readonly TreeEdit[],
): { path: string; content: string }[] {
  const out = files.map((f) => ({ ...f }));
  edits.forEach((edit, i) => {
    const file = out[(picks[i] ?? 0) % out.length]!;
    if (edit.kind === 'splice') {
      const at = edit.at % (file.content.length + 1);
      file.content = file.content.slice(0, at) + edit.text + file.content.slice(at + edit.drop);
    } else if (edit.kind === 'rename') {
      file.path = edit.to;
    } else {
      out.push({ path: edit.path, content: edit.content });
    }
  });
  return out;
}

describe.each(ENGINES.slice(0, 1))('fuzzing the HTTP edges on %s', (engine) => {
  let s: TestServer;
  let hook: SeededWebhook;
  beforeAll(async () => {
    // Rate limits would answer 429 to nearly every fuzzed delivery: the properties are about what lies behind.
    s = await startTestServer(engine, {
      compose: { ingress: { limits: { senderPoints: 1_000_000, failedAuthPoints: 1_000_000 } } },
      config: { validateRateLimit: 0 },
    });
    hook = await seedWebhook(s);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('the ingress: any path, headers and body', async () => {
    const headerValue = fc.string({
      maxLength: 40,
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constant(''), pathSegment),
        fc.oneof(fc.constant(undefined), pathSegment),
        fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'OPTIONS'),
        fc.record(
          {
            'content-type': fc.oneof(
              fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
              headerValue,
            ),
            authorization: fc.oneof(fc.constant('right'), headerValue),
            'webhook-id': headerValue,
            'x-agentyard-delivery-id': headerValue,
            'x-github-delivery': headerValue,
            'user-agent': headerValue,
            traceparent: headerValue,
          },
          { requiredKeys: [] },
        ),
        fc.oneof(
          jsonishText.map((t) => Buffer.from(t)),
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
        ),
        async (uidPart, tokenPart, method, headers, body) => {
          const uid = uidPart === '' ? hook.uid : uidPart;
          const url = `${s.url}/webhooks/w/${uid}${tokenPart !== undefined ? `/${tokenPart}` : ''}`;
          const sent = { ...headers };
          if (sent.authorization === 'right') sent.authorization = `Bearer ${hook.secret}`;
          const res = await send(url, method, method === 'GET' ? undefined : body, sent);
          expectWellFormed(res, `${method} ${url}`);
          if (res.status === 202) expect(res.body).toMatchObject({ delivery_id: expect.any(String) });
        },
      ),
      PROPERTY_OPTIONS,
    );
  });

  it('the Run API list: any query string', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/agent/runs', '/agent/tasks'), queryString, async (route, query) => {
        const url = `${s.apiUrl}${route}?${query}`;
        const res = await send(url, 'GET', undefined, { authorization: `Bearer ${s.adminKey}` });
        expectWellFormed(res, `GET ${url}`);
      }),
      PROPERTY_OPTIONS,
    );
  });

  it('numeric query parameters of every list endpoint: non-finite, huge, fractional and signed forms', async () => {
    const numberText = fc.oneof(
      fc.constantFrom('1e400', '-1e400', 'Infinity', '-Infinity', '+Infinity', 'NaN', '-0', '1e-400', '9e15'),
      fc.double().map(String),
      fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
      fc.integer().map(String),
    );
    const endpoints = [
      ['/agent/runs', 'limit'],
      ['/agent/tasks', 'limit'],
      ['/agent/events?run_ids=run_x', 'limit'],
      ['/agent/events?run_ids=run_x', 'since'],
      ['/factories', 'limit'],
      ['/factory', 'limit'],
      ['/factories/fct_x/applies', 'limit'],
      ['/webhooks/wh_x/deliveries', 'limit'],
      ['/delivery-stats', 'minutes'],
    ] as const;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...endpoints), numberText, async ([route, field], value) => {
        const url = `${s.apiUrl}${route}${route.includes('?') ? '&' : '?'}${field}=${encodeURIComponent(value)}`;
        const res = await send(url, 'GET', undefined, { authorization: `Bearer ${s.adminKey}` });
        expectWellFormed(res, `GET ${url}`);
        if (res.status === 400) expect((res.body as { detail: string }).detail).toContain(`querystring.${field}`);
      }),
      PROPERTY_OPTIONS,
    );
  });

  it('the Run API create: any body, and any run id in the path', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { weight: 4, arbitrary: wellShapedRunBody.map((b) => JSON.stringify(b)) },
          { weight: 1, arbitrary: anyRunBody.map((b) => JSON.stringify(b)) },
          { weight: 1, arbitrary: jsonishText },
        ),
        pathSegment,
        async (body, runId) => {
          const created = await send(`${s.apiUrl}/agent/runs`, 'POST', body, {
            authorization: `Bearer ${s.adminKey}`,
            'content-type': 'application/json',
          });
          expectWellFormed(created, `POST /agent/runs ${body.slice(0, 200)}`);
          for (const [method, suffix] of [
            ['GET', ''],
            ['POST', '/cancel'],
            ['GET', '/followups'],
          ] as const) {
            const res = await send(`${s.apiUrl}/agent/runs/${runId}${suffix}`, method, undefined, {
              authorization: `Bearer ${s.adminKey}`,
            });
            expectWellFormed(res, `${method} /agent/runs/${runId}${suffix}`);
          }
        },
      ),
      PROPERTY_OPTIONS,
    );
  });

  it('factory files through the validate endpoint: edited fixture trees', async () => {
    const base = fixtureFiles();
    const valid = await send(`${s.apiUrl}/factory-files/validate`, 'POST', JSON.stringify({ files: base }), {
      'content-type': 'application/json',
    });
    expect(valid.status).toBe(200);
    expect((valid.body as { valid: boolean }).valid).toBe(true);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        fc.array(treeEdit, { minLength: 1, maxLength: 4 }),
        async (picks, edits) => {
          const files = applyEdits(base, picks, edits);
          const res = await send(`${s.apiUrl}/factory-files/validate`, 'POST', JSON.stringify({ files }), {
            'content-type': 'application/json',
          });
          expectWellFormed(res, `validate ${JSON.stringify(edits).slice(0, 300)}`);
          if (res.status === 200) expect(typeof (res.body as { valid: unknown }).valid).toBe('boolean');
        },
      ),
      PROPERTY_OPTIONS,
    );
  });

  it('git source URLs: IPv6 zone ids and numeric forms of internal IPv4 are refused, nothing connects', async () => {
    const team = await send(`${s.apiUrl}/teams`, 'POST', JSON.stringify({ name: 'fuzz-ssrf', admin_name: 'A' }), {
      authorization: `Bearer ${s.adminKey}`,
      'content-type': 'application/json',
    });
    const teamKey = (team.body as { admin_key: { key: string } }).admin_key.key;
    let connections = 0;
    const trap = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
    const port = (trap.address() as AddressInfo).port;
    const internalV4 = fc.oneof(
      fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
      fc.constant([0, 0, 0, 0] as [number, number, number, number]),
    );
    const v4Forms = internalV4.chain(([a, b, c, d]) => {
      const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
      return fc.constantFrom(
        `${a}.${b}.${c}.${d}`,
        String(n),
        `0x${n.toString(16)}`,
        `0${a.toString(8)}.${b}.${c}.${d}`,
        `${a}.${(b << 16) + (c << 8) + d}`,
        `[::ffff:${a}.${b}.${c}.${d}]`,
        `[64:ff9b::${a}.${b}.${c}.${d}]`,
      );
    });
    const zone = fc.oneof(fc.constantFrom('lo', 'eth0', '1', '0', '%2F', 'lo%00'), fc.string({ maxLength: 6 }));
    const zoned = fc
      .tuple(fc.oneof(fc.ipV6(), fc.constantFrom('::1', '::ffff:127.0.0.1', 'fe80::1', '::')), zone)
      .map(([address, z]) => `[${address}%25${encodeURIComponent(z)}]`);
    await fc.assert(
      fc.asyncProperty(fc.oneof(v4Forms, zoned), fc.constantFrom('https', 'ssh'), async (host, scheme) => {
        const url = `${scheme}://${scheme === 'ssh' ? 'git@' : ''}${host}:${port}/r.git`;
        const res = await send(
          `${s.apiUrl}/factories`,
          'POST',
          JSON.stringify({ name: 'ssrf', source: { type: 'git', url, poll_interval_seconds: 0 } }),
          { authorization: `Bearer ${teamKey}`, 'content-type': 'application/json' },
        );
        expectWellFormed(res, `register ${url}`);
        expect(res.status, `${url}: ${res.text.slice(0, 300)}`).toBe(400);
      }),
      PROPERTY_OPTIONS,
    );
    trap.close();
    expect(connections).toBe(0);
  });

  it('still answers after the fuzzing', async () => {
    const res = await send(`${s.url}/healthz`, 'GET', undefined);
    expect(res.status).toBe(200);
  });
});
