/**
 * The README's five-minute tour, kept true. Two ways:
 * - step by step on both engines: a real server started the way the tour starts it (its environment read from
 *   README.md), a real git repository holding the files the README writes (parsed out of its heredocs and
 *   printf lines), the JSON bodies the README sends, and the real `agentyard validate`; every output the
 *   README's comments promise is checked against what the server and the CLI really say;
 * - the shell block itself, run with bash against a server, as a reader would paste it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import type { Engine } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import { DELIVERIES_EVALUATED_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';
import type { TestServer } from '../support/server.ts';
import { ROOT, asShown, expand, readTour } from './readme-tour-script.ts';
import type { Tour, TourCommit, TourRequest } from './readme-tour-script.ts';

const tour: Tour = readTour();
const AGENTYARD_BIN = path.join(ROOT, 'bin/agentyard.js');
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Tour Reader',
  GIT_AUTHOR_EMAIL: 'reader@example.com',
  GIT_COMMITTER_NAME: 'Tour Reader',
  GIT_COMMITTER_EMAIL: 'reader@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** The tour's server: every service as `npm start` has them, the executor configured by the README's variables. */
async function startTourServer(engine: Engine): Promise<TestServer> {
  return startTestServer(engine, { compose: { execution: { env: tour.serverEnv } } });
}

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, env: GIT_ENV, encoding: 'utf8' }).trim();
}

/** `node bin/agentyard.js validate .` in the factory directory, as the tour runs it. */
async function validate(dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [AGENTYARD_BIN, 'validate', '.'], { cwd: dir });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, stdout, stderr };
}

function commitFiles(dir: string, commit: TourCommit, vars: Record<string, string>): void {
  for (const file of commit.files) {
    mkdirSync(path.dirname(path.join(dir, file.path)), { recursive: true });
    writeFileSync(path.join(dir, file.path), expand(file, vars));
  }
}

function commit(dir: string, c: TourCommit): string {
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', c.message);
  return git(dir, 'rev-parse', 'HEAD');
}

function tourRequest(match: (r: TourRequest) => boolean, what: string): TourRequest {
  const found = tour.requests.find(match);
  if (!found) throw new Error(`README tour: no request ${what}`);
  return found;
}

function tourCommit(message: string): TourCommit {
  const found = tour.commits.find((c) => c.message === message);
  if (!found)
    throw new Error(`README tour: no commit "${message}" (commits: ${tour.commits.map((c) => c.message).join(', ')})`);
  return found;
}

/** The README shows this output in a comment (ids and hashes elided). */
function expectShown(output: string, serverUrl?: string): void {
  expect(tour.comments).toContain(asShown(output, serverUrl));
}

/** The delivery as the API answers it once the evaluator has told it committed its evaluation. */
function evaluated(s: TestServer, hookUid: string, deliveryId: string, what: string): Promise<any> {
  return whenTold(
    s.server.ctx.bus,
    [DELIVERIES_EVALUATED_TOPIC],
    async () => {
      const res = await s.api('GET', `/webhooks/${hookUid}/deliveries/${deliveryId}`);
      return res.body.evaluation === 'evaluated' ? res.body : undefined;
    },
    { what },
  );
}

describe('README tour: what the text says', () => {
  it('starts the server with the stand-in agent of examples/tour on the command harness', () => {
    expect(tour.serverCommand).toMatch(/ npm start$/);
    expect(tour.serverEnv).toEqual({
      AGENTYARD_HARNESSES: 'command',
      AGENTYARD_HARNESS_COMMAND_BIN: path.join(ROOT, 'examples/tour/agent.mjs'),
    });
  });

  it('commits the factory, the automation, the typo and the fix, in that order', () => {
    expect(tour.commits.map((c) => c.message)).toEqual([
      'demo factory',
      'run on failed builds',
      'typo',
      'fix the typo',
    ]);
    expect(tour.commits[0]!.files.map((f) => f.path).sort()).toEqual([
      'agents/foreman/agent.md',
      'factory.yaml',
      'runners/default.yaml',
      'webhooks/ci.yaml',
    ]);
    expect(tour.commits[1]!.files.map((f) => f.path)).toEqual(['automations/on-failure/automation.md']);
    expect(tour.commits[2]!.files.map((f) => f.path)).toEqual(['webhooks/ci.yaml']);
    // the fix restores the file of the first commit byte for byte
    expect(tour.commits[3]!.files[0]!.content).toBe(
      tour.commits[0]!.files.find((f) => f.path === 'webhooks/ci.yaml')!.content,
    );
  });

  it('the sender uses the secret the tour stores, and the automation names the webhook by its file name', () => {
    const secret = tourRequest((r) => r.url.includes('/api/v1/secrets/'), 'storing the secret');
    const deliveries = tour.requests.filter((r) => r.url === '$INGRESS');
    expect(deliveries.length).toBeGreaterThanOrEqual(2);
    for (const d of deliveries)
      expect(d.headers.authorization).toBe(`Bearer ${(secret.body as { value: string }).value}`);
    expect(tour.commits[1]!.files[0]!.content).toContain('webhook_ids: [ci]');
    expect(tour.commits[1]!.files[0]!.expands).toBe(false);
    expect(tour.script).toContain('HOOK=${INGRESS##*/}');
  });
});

describe.each(ENGINES)('README tour, step by step on %s', (engine) => {
  let s: TestServer;
  let dir: string;

  beforeAll(async () => {
    s = await startTourServer(engine);
    dir = mkdtempSync(path.join(tmpdir(), 'agentyard-tour-'));
    git(dir, 'init', '-q', '-b', 'main');
  });

  afterAll(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('goes from a commit to a live webhook to a run, and survives a bad commit', { timeout: 120_000 }, async () => {
    // 1. the managed secret
    const secretReq = tourRequest((r) => r.url.includes('/api/v1/secrets/'), 'storing the secret');
    const secretPath = secretReq.url.replace('$AY/api/v1', '');
    const secret = await s.api(secretReq.method, secretPath, secretReq.body);
    expect(secret.status).toBe(201);
    expect(secret.body.name).toBe(secretPath.split('/').pop());

    // 2. the factory repository, checked offline
    commitFiles(dir, tourCommit('demo factory'), {});
    const offline = await validate(dir);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toBe('');
    expectShown(offline.stderr);
    const first = commit(dir, tourCommit('demo factory'));

    // 3. registered, synced, applied; the webhook's UID and ingress URL
    const createReq = tourRequest((r) => r.url === '$AY/api/v1/factories', 'registering the factory');
    const body = structuredClone(createReq.body) as { name: string; source: { url: string } };
    expect(body.source.url).toBe('file:///tmp/demo-factory');
    expect(tour.script).toContain('mkdir -p /tmp/demo-factory && cd /tmp/demo-factory');
    body.source.url = `file://${dir}`;
    const created = await s.api('POST', '/factories', body);
    expect(created.status).toBe(201);
    const factoryId = created.body.id as string;
    const synced = await s.api('POST', `/factories/${factoryId}/sync`);
    expect(synced.status).toBe(200);
    expect(synced.body.status.state).toBe('applied');
    expect(synced.body.status.applied_revision).toBe(`main@sha1:${first}`);
    expectShown(synced.body.status.message);
    const factory = await s.api('GET', `/factories/${factoryId}`);
    expect(factory.body.status).toMatchObject({
      state: 'applied',
      ready: true,
      applied_revision: `main@sha1:${first}`,
      errors: [],
    });

    const hooks = await s.api('GET', `/factories/${factoryId}/webhooks`);
    expect(hooks.body.webhooks).toHaveLength(1);
    const hook = hooks.body.webhooks[0];
    expect(hook).toMatchObject({
      name: 'ci',
      file: 'webhooks/ci.yaml',
      auth_mode: 'token',
      secret_name: 'ci-webhook',
      enabled: true,
    });
    expect(hook.uid).toMatch(/^wh_[0-9a-z]{26}$/);
    const ingress = hook.ingress_url as string;
    expect(ingress).toBe(`${s.url}/webhooks/w/${hook.uid}`);
    expect(ingress.split('/').pop()).toBe(hook.uid); // ${INGRESS##*/}
    expectShown(ingress, s.url);

    // 4. the automation, naming the webhook by its file name, committed and synced
    commitFiles(dir, tourCommit('run on failed builds'), {});
    const second = commit(dir, tourCommit('run on failed builds'));
    const withAutomation = await s.api('POST', `/factories/${factoryId}/sync`);
    expect(withAutomation.body.result).toBe('applied');
    expectShown(withAutomation.body.result);
    expect(withAutomation.body.status.applied_revision).toBe(`main@sha1:${second}`);
    expect(withAutomation.body.changes).toEqual([
      expect.objectContaining({ kind: 'automation', name: 'on-failure', action: 'created' }),
    ]);
    const automationId = withAutomation.body.changes[0].id as string;

    // 5. a delivery: 202, Accepted, one run with the envelope and the payload attached, which the agent runs
    const [delivery, passing] = tour.requests.filter((r) => r.url === '$INGRESS');
    const sent = await request(ingress, {
      method: 'POST',
      body: JSON.stringify(delivery!.body),
      headers: delivery!.headers,
    });
    expect(sent.status).toBe(202);
    const deliveryId = sent.body.delivery_id as string;
    expect(deliveryId).toMatch(/^dlv_/);

    const detail = await evaluated(s, hook.uid, deliveryId, 'the delivery to be evaluated');
    expect(detail).toMatchObject({
      delivery_id: deliveryId,
      label: 'Accepted',
      status: 'accepted',
      payload: delivery!.body,
    });
    expect(detail.runs).toEqual([{ run_id: expect.stringMatching(/^run_/), automation_id: automationId }]);
    const runId = detail.runs[0].run_id as string;
    expect(tour.comments.some((c) => c.includes('"Accepted"'))).toBe(true);

    const list = await s.api('GET', '/agent/runs?source=WEBHOOK');
    expect(list.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
    const run = list.body.runs[0];
    expect(run).toMatchObject({
      source: 'API',
      source_detail: 'WEBHOOK',
      delivery_id: deliveryId,
      automation_id: automationId,
      factory_uid: factoryId,
    });
    const automationBody = expand(tourCommit('run on failed builds').files[0]!, {}).split('\n---\n')[1]!.trim();
    expect(run.prompt.startsWith(`${automationBody}\n`)).toBe(true);
    expect(run.prompt).toContain(`- Webhook: ci (${hook.uid})`);
    expect(run.prompt).toContain(`- Delivery ID: ${deliveryId}`);
    expect(run.prompt).toContain(`- Automation: on-failure (${automationId})`);
    expect(run.prompt).toContain('attached as the file `event-payload.json`');

    const attachments = await s.api('GET', `/agent/runs/${runId}/handoff/attachments`);
    expect(attachments.body.attachments).toHaveLength(1);
    expect(attachments.body.attachments[0]).toMatchObject({
      filename: 'event-payload.json',
      mime_type: 'application/json',
    });
    expectShown(attachments.body.attachments[0].filename);
    const download = await fetch(attachments.body.attachments[0].download_url);
    expect(JSON.parse(await download.text())).toEqual(delivery!.body);

    // the README's `curl -sN …/events`: the stream ends once the run is finished
    const stream = await fetch(`${s.apiUrl}/agent/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
    });
    const events = (await stream.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map(
        (l) => JSON.parse(l.slice(6)) as { type?: string; state?: string; data?: { state?: string; text?: string } },
      );
    const states = events.filter((e) => e.type === 'state').map((e) => e.data!.state);
    expect(states).toEqual(['CLAIMED', 'INPROGRESS', 'SUCCEEDED']);
    expect(events.find((e) => e.type === 'result')?.data?.text).toBe(
      'Read event-payload.json: build 42 is failed. (A real agent would now look for the cause.)',
    );
    expect(events.at(-1)).toMatchObject({ run_id: runId, state: 'SUCCEEDED' });
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('SUCCEEDED');

    // 6. the typo: refused offline and by the server at file:line:column; the webhook still answers
    commitFiles(dir, tourCommit('typo'), {});
    const refusedOffline = await validate(dir);
    expect(refusedOffline.code).toBe(1);
    expectShown(refusedOffline.stdout);
    const typo = commit(dir, tourCommit('typo'));
    const refused = await s.api('POST', `/factories/${factoryId}/sync`);
    expect(refused.body.result).toBe('failed');
    expect(refused.body.status).toMatchObject({
      state: 'failed',
      reason: 'ValidationFailed',
      applied_revision: `main@sha1:${second}`,
      attempted_revision: `main@sha1:${typo}`,
    });
    expect(refused.body.status.errors).toEqual([
      expect.objectContaining({
        file: 'webhooks/ci.yaml',
        line: 1,
        column: 11,
        code: 'FF_INVALID_VALUE',
        severity: 'error',
      }),
    ]);
    expectShown(refused.body.status.message);

    const stillLive = await request(ingress, {
      method: 'POST',
      body: JSON.stringify(passing!.body),
      headers: passing!.headers,
    });
    expect(stillLive.status).toBe(202);
    expectShown(`${stillLive.text} 202`); // curl -w ' %{http_code}\n'
    // `status: passed` is not a failure: the filter lets it by, and no second run starts
    await evaluated(s, hook.uid, stillLive.body.delivery_id, 'the second delivery to be evaluated');
    expect((await s.api('GET', '/agent/runs?source=WEBHOOK')).body.runs).toHaveLength(1);

    // 7. the fix applies, and the webhook keeps its UID
    commitFiles(dir, tourCommit('fix the typo'), {});
    const fix = commit(dir, tourCommit('fix the typo'));
    const fixed = await s.api('POST', `/factories/${factoryId}/sync`);
    expect(fixed.body.status).toMatchObject({ state: 'applied', applied_revision: `main@sha1:${fix}`, errors: [] });
    expectShown(fixed.body.status.state);
    const after = await s.api('GET', `/factories/${factoryId}/webhooks`);
    expect(after.body.webhooks.map((w: { uid: string }) => w.uid)).toEqual([hook.uid]);
  });
});

// The shell block as a reader pastes it. One engine is enough here (the steps above run on both); PGlite is
// what `npm start` uses.
describe('README tour, the shell block run with bash (pglite)', () => {
  let s: TestServer;
  let work: string;

  beforeAll(async () => {
    s = await startTourServer('pglite');
    work = mkdtempSync(path.join(tmpdir(), 'agentyard-tour-sh-'));
  });

  afterAll(async () => {
    await s?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('prints what its comments say', { timeout: 120_000 }, async () => {
    const keyFile = path.join(work, 'admin.key');
    writeFileSync(keyFile, s.adminKey);
    const factoryDir = path.join(work, 'demo-factory');
    // Only the places that differ on a test machine: the server's address, the key file and the scratch directory.
    const script = tour.script
      .replaceAll('http://localhost:8080', s.url)
      .replaceAll('.agentyard/admin.key', keyFile)
      .replaceAll('/tmp/demo-factory', factoryDir);
    const child = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: { ...GIT_ENV, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}` },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));

    const out = stdout.split('\n').map((l) => asShown(l, s.url));
    const context = `stdout:\n${stdout}\nstderr:\n${stderr}`;
    expect(code, context).toBe(0);
    // stderr holds only validate's two summaries
    expect(stderr.trim().split('\n'), context).toEqual([
      '4 files: 0 errors, 0 warnings; 1 state-dependent check (secrets, webhook UIDs) run at apply',
      // the typo makes webhooks/ci.yaml unreadable, so its secret is not looked up; [ci] still names the file
      '5 files: 1 error, 0 warnings',
    ]);
    expect(out[0], context).toBe('ci-webhook');
    for (const shown of [
      'Applied revision: main@sha1:…',
      'http://localhost:8080/webhooks/w/wh_…',
      'applied',
      'event-payload.json',
      '{"delivery_id":"dlv_…"} 202',
    ]) {
      expect(tour.comments, shown).toContain(shown);
      expect(out, context).toContain(shown);
    }
    for (const line of tour.comments.filter(
      (c) => c.startsWith('webhooks/ci.yaml:1:11') || c.startsWith('validate main@sha1:'),
    )) {
      expect(out, context).toContain(line);
    }
    expect(stdout).toContain('"label": "Accepted"');
    expect(stdout).toMatch(/"runs": \[\n\s+\{\n\s+"run_id": "run_/);
    expect(stdout).toContain(
      'Find out why the build failed and propose a fix.\n\n---\nWebhook delivery (added by Agentyard)',
    );
    expect(stdout).toContain('"state":"SUCCEEDED"');
    expect(out.at(-2)).toBe('applied'); // the fix (the last line is the empty one after it)
  });
});
