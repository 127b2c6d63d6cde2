/**
 * Pull request events through a GitHub App connection, end to end on real HTTP with deliveries signed by
 * @octokit/webhooks-methods (payloads from @octokit/webhooks-examples) and octokit calling a local stand-in of
 * GitHub's API: `paths` filters match the pull request's changed files (`pulls.listFiles`), and a git factory
 * whose production branch the pull request targets gets the `agentyard/factory-config` check run, planned from
 * the head commit of a real git repository.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { startGithubApi } from '../support/github-api.ts';
import type { GithubApiStandIn } from '../support/github-api.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post } from '../ingress/support.ts';
import { afterCalls } from '../support/signals.ts';

import { automationNamesOf, evaluatedWithJob } from './fixtures.ts';
import { createGitFactory } from '../factories/support.ts';
import type { GitFactory } from '../factories/support.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

const INSTALLATION = 4242777;

const FACTORY = `schemaVersion: v1alpha1
name: Reviews
repositories:
  - owner: Codertocat
    name: Hello-World
agentDefaults:
  model: auto
  runner: default
`;

const SOURCE_REVIEW = `---
triggers:
  - provider: github
    event: pull_request_opened
    filter:
      paths: ["src/**"]
---

Review the source change.
`;

const BROKEN = `---
triggers:
  - provider: github
    event: pull_request_exploded
---

Never valid.
`;

const DOCS_REVIEW = `---
triggers:
  - provider: github
    event: pull_request_opened
    filter:
      paths: ["docs/**"]
---

Review the documentation.
`;

/**
 * A pull request event from GitHub's examples; `master` (the example's base) is not the factory's production
 * branch. The examples hold no `edited`: it is the `opened` one with GitHub's `changes` (webhooks-types' schema).
 */
function pullRequest(
  action: 'opened' | 'synchronize' | 'edited',
  number: number,
  head?: { sha: string; ref: string },
  base = 'master',
  changes?: Record<string, unknown>,
): Record<string, any> {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find(
    (e) => e.name === 'pull_request',
  )!;
  const payload = structuredClone(entry.examples.find((x) => x.action === (action === 'edited' ? 'opened' : action))!);
  if (action === 'edited') {
    payload.action = 'edited';
    payload.changes = changes ?? {};
  }
  payload.number = number;
  payload.pull_request.number = number;
  payload.pull_request.base.ref = base;
  payload.repository.full_name = 'Codertocat/Hello-World';
  if (head) {
    payload.pull_request.head.sha = head.sha;
    payload.pull_request.head.ref = head.ref;
  }
  // As an App's delivery carries it.
  payload.installation = { id: INSTALLATION, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mjc3Nw==' };
  return payload;
}

describe.each(ENGINES)('pull requests through a GitHub App on %s', (engine) => {
  let server: TestServer;
  let github: GithubApiStandIn;
  let eventsUrl: string;
  let factory: GitFactory;
  const webhookSecret = randomBytes(20).toString('hex');
  let deliveries = 0;

  beforeAll(async () => {
    github = await startGithubApi(publicKey);
    process.env.AGENTYARD_GITHUB_API_URL = github.url;
    server = await startTestServer(engine);
    for (const [name, value] of Object.entries({ 'gh-app-key': privateKey, 'gh-app-hook': webhookSecret }))
      expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    const connection = await server.api('PUT', '/integrations/github', {
      mode: 'app',
      app_id: '4242',
      private_key_secret_name: 'gh-app-key',
      webhook_secret_name: 'gh-app-hook',
    });
    expect(connection.status, connection.text).toBe(200);
    eventsUrl = connection.body.events_url;
  });
  afterAll(async () => {
    await server?.close();
    await github?.close();
    delete process.env.AGENTYARD_GITHUB_API_URL;
  });

  it('applies a git factory that names its GitHub repository', async () => {
    factory = await createGitFactory(
      server,
      {
        'factory.yaml': FACTORY,
        'agents/foreman/agent.md': FOREMAN,
        'runners/default.yaml': RUNNER,
        'automations/source-review/automation.md': SOURCE_REVIEW,
        'automations/docs-review/automation.md': DOCS_REVIEW,
      },
      { github_repository: 'Codertocat/Hello-World' },
    );
    expect((await factory.sync()).status.state).toBe('applied');
    expect((await server.api('GET', `/factories/${factory.id}`)).body.source.github_repository).toBe(
      'Codertocat/Hello-World',
    );
  });

  async function deliver(payload: Record<string, any>): Promise<string> {
    const body = JSON.stringify(payload);
    const res = await post(eventsUrl, body, {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': `0b5e2f9a-7c1d-4e8b-9a3f-${String(++deliveries).padStart(12, '0')}`,
      'x-hub-signature-256': await sign(webhookSecret, body),
    });
    expect(res.status, res.text).toBe(202);
    return res.body.delivery_id as string;
  }

  const evaluated = (deliveryId: string) => evaluatedWithJob(server, deliveryId, 'pull_files');
  const automationNames = (deliveryId: string) => automationNamesOf(server, deliveryId);

  it('a pull request touching src/ fires the src/** automation and not the docs/** one', async () => {
    github.pullFiles.set('Codertocat/Hello-World#101', ['src/a.ts', 'README.md']);
    const id = await deliver(pullRequest('opened', 101));
    await evaluated(id);
    expect(await automationNames(id)).toEqual(['source-review']);
    const listed = github.calls.filter((c) => c.path === '/repos/Codertocat/Hello-World/pulls/101/files');
    expect(listed).toHaveLength(1);
    // The token was asked for the event's repository through the App's installation.
    expect(github.tokenRequests.at(-1)).toMatchObject({ installationId: String(INSTALLATION), appId: '4242' });
  });

  it('one touching only docs/ does not fire the src/** automation', async () => {
    github.pullFiles.set('Codertocat/Hello-World#102', ['docs/guide.md']);
    const id = await deliver(pullRequest('opened', 102));
    await evaluated(id);
    expect(await automationNames(id)).toEqual(['docs-review']);
  });

  it('pages through a large pull request', async () => {
    const files = Array.from({ length: 250 }, (_, i) => `docs/page-${i}.md`);
    files.push('src/late.ts');
    github.pullFiles.set('Codertocat/Hello-World#103', files);
    const id = await deliver(pullRequest('opened', 103));
    await evaluated(id);
    expect(await automationNames(id)).toEqual(['docs-review', 'source-review']);
    expect(github.calls.filter((c) => c.path === '/repos/Codertocat/Hello-World/pulls/103/files')).toHaveLength(3);
  });

  it('a rate-limited answer is retried when GitHub says, and the event still fires', async () => {
    github.pullFiles.set('Codertocat/Hello-World#104', ['src/b.ts']);
    github.failNext({ status: 403, headers: { 'retry-after': '1', 'x-ratelimit-remaining': '0' } });
    const id = await deliver(pullRequest('opened', 104));
    await evaluated(id);
    expect(await automationNames(id)).toEqual(['source-review']);
    const job = await server.server.ctx.db.query<{ attempts: number; state: string }>(
      `SELECT attempts, state FROM integration_jobs WHERE delivery_id = $1`,
      [id],
    );
    expect(job.rows[0]).toEqual({ attempts: 2, state: 'done' });
  });

  it('a pull request GitHub does not know: no paths match, the delivery is kept and the connection says why', async () => {
    const id = await deliver(pullRequest('opened', 105));
    await evaluated(id);
    expect(await automationNames(id)).toEqual([]);
    const connection = await server.api('GET', '/integrations/github');
    expect(connection.body.last_error).toContain('Codertocat/Hello-World#105');
    expect(connection.body.last_error).toContain('404');
  });

  /** The check run calls for a head, once its PATCH completed it. */
  async function checkRun(headSha: string): Promise<{ created: any; updates: any[] }> {
    return afterCalls(
      github,
      () => {
        const created = github.calls.find((c) => c.method === 'POST' && c.body?.head_sha === headSha);
        if (!created) return undefined;
        const index = github.calls.indexOf(created);
        const updates = github.calls.slice(index + 1).filter((c) => c.method === 'PATCH');
        const done = updates.findIndex((u) => u.body?.status === 'completed');
        return done === -1 ? undefined : { created, updates: updates.slice(0, done + 1) };
      },
      { what: `the check run of ${headSha}`, timeoutMs: 60_000 },
    );
  }

  /** Commits `files` on top of main and publishes the commit only as GitHub publishes a pull request's head. */
  async function pullHead(number: number, files: Record<string, string>): Promise<string> {
    await factory.remote.shell('git checkout --quiet -B "pr-$1" main', String(number));
    await factory.remote.write(files);
    const sha = await factory.remote.shell(
      `git add -A
       git commit --quiet -m "pull request $1"
       git rev-parse HEAD
       git push --quiet --force origin "HEAD:refs/pull/$1/head"
       git checkout --quiet main`,
      String(number),
    );
    return sha.trim();
  }

  it('a head with a bad file gets a failing agentyard/factory-config check annotated at file:line', async () => {
    const applied = (await factory.status()).applied_revision;
    const sha = await pullHead(201, { 'automations/broken/automation.md': BROKEN });
    await deliver(pullRequest('opened', 201, { sha, ref: 'pr-201' }, 'main'));
    const { created, updates } = await checkRun(sha);
    expect(created.path).toBe('/repos/Codertocat/Hello-World/check-runs');
    expect(created.body).toMatchObject({ name: 'agentyard/factory-config', head_sha: sha, status: 'in_progress' });
    const done = updates.at(-1)!;
    expect(done.path).toBe(`/repos/Codertocat/Hello-World/check-runs/${(await checkRunId(sha))!}`);
    expect(done.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(done.body.output.title).toContain('1 error');
    expect(done.body.output.summary).toContain('automations/broken/automation.md:4');
    const line = BROKEN.split('\n').findIndex((l) => l.includes('pull_request_exploded')) + 1;
    expect(done.body.output.annotations).toContainEqual(
      expect.objectContaining({
        path: 'automations/broken/automation.md',
        start_line: line,
        end_line: line,
        annotation_level: 'failure',
        title: 'FF_INVALID_EVENT',
      }),
    );
    // Checked, never applied.
    expect((await factory.status()).applied_revision).toBe(applied);
  });

  async function checkRunId(sha: string): Promise<number | undefined> {
    const res = await server.server.ctx.db.query<{ id: number }>(
      `SELECT (result->>'check_run_id')::int AS id FROM integration_jobs WHERE kind = 'factory_check' AND input->>'head_sha' = $1`,
      [sha],
    );
    return res.rows[0]?.id;
  }

  it('a good head gets success with the plan summary; a push to it gets a new check run for the new head', async () => {
    const first = await factory.commit(
      {
        'automations/triage/automation.md': `---
triggers:
  - provider: github
    event: issue_labeled
---

Triage the issue.
`,
      },
      'a new automation',
      { branch: 'feature' },
    );
    const sha = first.split('@sha1:')[1]!;
    await deliver(pullRequest('opened', 202, { sha, ref: 'feature' }, 'main'));
    const { updates } = await checkRun(sha);
    const done = updates.at(-1)!;
    expect(done.body).toMatchObject({ status: 'completed', conclusion: 'success' });
    expect(done.body.output.title).toBe('Merging would apply: 1 to create, 0 to change, 0 to delete');
    expect(done.body.output.summary).toContain('+ automation triage (automations/triage/automation.md)');
    expect(done.body.output.annotations).toEqual([]);

    const second = await factory.commit({ 'automations/triage/automation.md': BROKEN }, 'break it', {
      branch: 'feature',
    });
    const next = second.split('@sha1:')[1]!;
    await deliver(pullRequest('synchronize', 202, { sha: next, ref: 'feature' }, 'main'));
    const again = await checkRun(next);
    expect(again.created.body.head_sha).toBe(next);
    expect(again.updates.at(-1)!.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(await checkRunId(next)).not.toBe(await checkRunId(sha));
  });

  it('a head that cannot be fetched gets a completed failing check that says so', async () => {
    const missing = 'f'.repeat(40);
    await deliver(pullRequest('opened', 203, { sha: missing, ref: 'gone' }, 'main'));
    const { updates } = await checkRun(missing);
    const done = updates.at(-1)!;
    expect(done.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(done.body.output.title).toBe('The pull request head could not be read');
    expect(done.body.output.summary).toContain('the commit is not in the repository');
  });

  it('a head over the source limits gets a failing check at the file too large, never a crash', async () => {
    const sha = await pullHead(205, { 'agents/huge/agent.md': `---\n---\n${'x'.repeat(300 * 1024)}\n` });
    await deliver(pullRequest('opened', 205, { sha, ref: 'pr-205' }, 'main'));
    const { updates } = await checkRun(sha);
    const done = updates.at(-1)!;
    expect(done.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(done.body.output.annotations).toContainEqual(
      expect.objectContaining({
        path: 'agents/huge/agent.md',
        title: 'FF_LIMIT_EXCEEDED',
        annotation_level: 'failure',
      }),
    );
  });

  it('a head with more files than the source limits gets a failing check that says so', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i <= 2_000; i++) files[`automations/many-${i}/automation.md`] = SOURCE_REVIEW;
    const sha = await pullHead(207, files);
    await deliver(pullRequest('opened', 207, { sha, ref: 'pr-207' }, 'main'));
    const { updates } = await checkRun(sha);
    const done = updates.at(-1)!;
    expect(done.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(JSON.stringify(done.body.output)).toContain('AGENTYARD_SOURCE_MAX_FILES');
  });

  it('a pull request retargeted to the production branch (edited, new base) gets the check', async () => {
    const sha = await pullHead(206, { 'automations/broken/automation.md': BROKEN });
    const head = { sha, ref: 'pr-206' };
    const opened = await deliver(pullRequest('opened', 206, head, 'release'));
    const retitled = await deliver(
      pullRequest('edited', 206, head, 'release', { title: { from: 'Update the README with new information' } }),
    );
    for (const id of [opened, retitled]) await evaluated(id);
    // Neither the pull request to another branch nor a title edit asks for a check.
    const before = await server.server.ctx.db.query(
      `SELECT id FROM integration_jobs WHERE kind = 'factory_check' AND delivery_id = ANY($1::text[])`,
      [[opened, retitled]],
    );
    expect(before.rows).toEqual([]);
    expect(github.calls.some((c) => c.method === 'POST' && c.body?.head_sha === sha)).toBe(false);

    await deliver(
      pullRequest('edited', 206, head, 'main', {
        base: { ref: { from: 'release' }, sha: { from: 'c'.repeat(40) } },
      }),
    );
    const { created, updates } = await checkRun(sha);
    expect(created.body).toMatchObject({ name: 'agentyard/factory-config', head_sha: sha });
    expect(updates.at(-1)!.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
  });

  it('more than 50 annotations go in several updates, the last completing the check', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`automations/broken-${i}/automation.md`] = BROKEN;
    const sha = await pullHead(204, files);
    await deliver(pullRequest('opened', 204, { sha, ref: 'pr-204' }, 'main'));
    const { updates } = await checkRun(sha);
    expect(updates.map((u) => u.body.output.annotations.length)).toEqual([50, 10]);
    expect(updates[0]!.body.status).toBeUndefined();
    expect(updates[1]!.body).toMatchObject({ status: 'completed', conclusion: 'failure' });
  });

  it("the previous release's statements on github_jobs reach the renamed queue (a rolling deploy)", async () => {
    const db = server.server.ctx.db;
    const job = await db.query<{ team_id: string; connection_id: string; delivery_id: string }>(
      'SELECT team_id, connection_id, delivery_id FROM integration_jobs ORDER BY created_at LIMIT 1',
    );
    const { team_id, connection_id, delivery_id } = job.rows[0]!;
    // as release 0070 inserts, with a run_after no runner reaches before the row is gone
    const insert = () =>
      db.query(
        `INSERT INTO github_jobs (id, kind, team_id, connection_id, delivery_id, factory_id, input, run_after)
         VALUES ($1, 'factory_check', $2, $3, $4, 'fac_rolling', '{}', ay_now() + interval '1 hour')
         ON CONFLICT DO NOTHING RETURNING id`,
        [`ghj_rolling_${engine}`, team_id, connection_id, delivery_id],
      );
    expect((await insert()).rowCount).toBe(1);
    expect((await insert()).rowCount).toBe(0);
    const locked = await db.transaction((tx) =>
      tx.query<{ kind: string }>(`SELECT kind FROM github_jobs WHERE id = $1 FOR UPDATE SKIP LOCKED`, [
        `ghj_rolling_${engine}`,
      ]),
    );
    expect(locked.rows).toEqual([{ kind: 'factory_check' }]);
    const moved = await db.query('DELETE FROM integration_jobs WHERE id = $1 RETURNING id', [`ghj_rolling_${engine}`]);
    expect(moved.rowCount).toBe(1);
  });
});
