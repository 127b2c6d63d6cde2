/**
 * Who may connect a self-hosted worker, and which runs (with which secrets) a connection may receive
 * (docs/security.md, "Self-hosted workers"): a member key cannot register a worker under an admin's worker id
 * and be handed that admin's run with its secretEnv (issue 28, item 3); worker tokens are created by team
 * admins for named worker ids, stored as hashes, listed without their value, and revoked; a token's worker
 * receives only its team's runs, and a run that acts as a member (credentialStrategy CREATOR) only when the
 * token's creator is that member; an admin key's worker receives them all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { createRun, startExecServer, waitForState, whenRunsTold } from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { connect, hello } from './support.ts';
import type { Client } from './support.ts';

const ADMIN_ANTHROPIC = `sk-ant-admin-${'x'.repeat(24)}`;

async function welcomed(
  s: ExecServer,
  credential: string,
  workerId: string,
  harnesses = ['command'],
  capacity = 1,
): Promise<Client> {
  const c = await connect(s, credential);
  if (!('ws' in c)) throw new Error(`connect answered ${c.status}`);
  c.send({ ...hello(workerId, capacity), harnesses, default_harness: harnesses[0] });
  await c.next('welcome');
  return c;
}

describe.each(ENGINES)('who may run a worker, and which runs it gets, on %s', (engine) => {
  let s: ExecServer;
  let admin: string;
  let member: string;
  let adminUid: string;
  beforeAll(async () => {
    s = await startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } });
    admin = (await s.api('POST', '/api-keys', { name: 'team admin', role: 'admin' })).body.key;
    // a member key of a service account: the kind `POST /api-keys {"name": "worker"}` used to make for workers
    member = (await s.api('POST', '/api-keys', { name: 'mallory' })).body.key;
    adminUid = (await s.api('GET', '/whoami', undefined, admin)).body.principal.uid;
    expect((await s.api('PUT', '/secrets/admin-anthropic', { value: ADMIN_ANTHROPIC }, admin)).status).toBe(201);
  });
  afterAll(async () => {
    await s?.close();
  });

  it("a member key cannot register a worker under an admin's worker id, so never gets the admin's run and secrets", async () => {
    const runId = await createRun(
      s,
      {
        prompt: 'deploy',
        config: {
          worker_host: 'admin-box',
          harness: { type: 'claude' },
          harness_auth_secrets: { claude_auth_secret_name: 'admin-anthropic' },
        },
      },
      admin,
    );
    const attempt = await connect(s, member);
    expect(attempt).toEqual({ status: 403 });
    // a member user's key is refused the same way
    const whoami = (await s.api('GET', '/whoami')).body;
    const memberUser = (
      await s.api('POST', '/api-keys', { name: 'user member', role: 'member', principal_id: whoami.principal.uid })
    ).body.key;
    expect(await connect(s, memberUser)).toEqual({ status: 403 });

    // the team admin's own worker gets it, secret and all
    const c = await welcomed(s, admin, 'admin-box', ['claude']);
    const assignment = await c.next('assignment');
    expect(assignment.plan.runId).toBe(runId);
    expect(assignment.plan.secretEnv.ANTHROPIC_API_KEY).toBe(ADMIN_ANTHROPIC);
    c.send({ type: 'rejected', execution_id: assignment.execution_id, reason: 'shutting_down' });
    c.ws.close();
    await s.api('POST', `/agent/runs/${runId}/cancel`, undefined, admin);
  });

  it('worker tokens: created by team admins for named worker ids, shown once, listed by prefix, revoked', async () => {
    const refused = await s.api('POST', '/workers/tokens', { name: 'box', worker_ids: ['box-a'] }, member);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('not_authorized');
    expect((await s.api('GET', '/workers/tokens', undefined, member)).status).toBe(403);
    for (const bad of [
      { name: 'x', worker_ids: [] },
      { name: 'x', worker_ids: ['service'] },
      { name: 'x', worker_ids: ['ok', 'not ok'] },
      { name: '', worker_ids: ['ok'] },
      { worker_ids: ['ok'] },
    ]) {
      const res = await s.api('POST', '/workers/tokens', bad, admin);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }

    const created = await s.api(
      'POST',
      '/workers/tokens',
      { name: 'build box', worker_ids: ['box-a', 'box-b'] },
      admin,
    );
    expect(created.status, created.text).toBe(201);
    const token = created.body.token as string;
    expect(token).toMatch(/^ayw_[A-Za-z0-9_-]{40,}$/);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^wtk_/),
      name: 'build box',
      worker_ids: ['box-a', 'box-b'],
      created_by: { uid: adminUid },
      revoked_at: null,
    });
    expect(token.startsWith(created.body.prefix)).toBe(true);
    const stored = await s.server.ctx.db.query<{ token_hash: string }>(
      'SELECT token_hash FROM worker_tokens WHERE id = $1',
      [created.body.id],
    );
    expect(stored.rows[0]!.token_hash).not.toContain(token.slice(4));
    const listed = await s.api('GET', '/workers/tokens', undefined, admin);
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(token);
    expect(listed.body.worker_tokens.find((t: { id: string }) => t.id === created.body.id)).toMatchObject({
      prefix: created.body.prefix,
      worker_ids: ['box-a', 'box-b'],
    });
    // a worker token is no API key
    expect((await s.api('GET', '/whoami', undefined, token)).status).toBe(401);

    // only the named worker ids
    const other = await connect(s, token);
    if (!('ws' in other)) throw new Error('no connection');
    other.send(hello('box-c'));
    expect(await other.next('error')).toMatchObject({ code: 'worker_id_not_allowed' });
    expect((await other.closed).code).toBe(4403);

    const c = await welcomed(s, token, 'box-a');
    const revoked = await s.api('DELETE', `/workers/tokens/${created.body.id}`, undefined, admin);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.revoked_at).not.toBeNull();
    // its connections end, and it connects no more
    expect((await c.closed).code).toBe(4410);
    expect(await connect(s, token)).toEqual({ status: 401 });
    expect((await s.api('DELETE', '/workers/tokens/wtk_nope', undefined, admin)).status).toBe(404);
  });

  it("a token's worker gets its team's runs only, and a run acting as a member only when that member made the token", async () => {
    const token = (await s.api('POST', '/workers/tokens', { name: 'shared', worker_ids: ['shared-box'] }, admin)).body
      .token as string;
    const other = (await s.api('POST', '/teams', { name: 'other team' })).body.admin_key.key as string;
    const foreign = await createRun(s, { prompt: 'theirs', config: { worker_host: 'shared-box' } }, other);
    // a run that acts as the admin's GitHub account, as the server creates it from a signed event
    await s.server.ctx.db.query(
      `INSERT INTO integration_identities (team_id, subject_id, subject_name, provider, secret_name, external_id)
       VALUES ($1, $2, 'team admin', 'github', 'admin-github', 'octo-admin')`,
      [(await s.api('GET', '/whoami', undefined, admin)).body.team.id, adminUid],
    );
    const teamId = (await s.api('GET', '/whoami', undefined, admin)).body.team.id as string;
    const mallory = await s.api('GET', '/whoami', undefined, member);
    const actingAsMallory = await s.server.services.runs.create({
      teamId,
      prompt: 'acts as mallory',
      config: { worker_host: 'shared-box' },
      source: 'GITHUB_ACTION',
      creator: null,
      actsAs: { provider: 'github', account: 'mallory-gh' },
    });
    await s.server.ctx.db.query(
      `INSERT INTO integration_identities (team_id, subject_id, subject_name, provider, secret_name, external_id)
       VALUES ($1, $2, 'mallory', 'github', 'mallory-github', 'mallory-gh')`,
      [teamId, mallory.body.principal.uid],
    );
    const actingAsAdmin = await s.server.services.runs.create({
      teamId,
      prompt: 'acts as the admin',
      config: { worker_host: 'shared-box' },
      source: 'GITHUB_ACTION',
      creator: null,
      actsAs: { provider: 'github', account: 'octo-admin' },
    });
    const plain = await createRun(s, { prompt: 'plain', config: { worker_host: 'shared-box' } }, admin);

    // one claim takes every run the connection may receive, oldest first: the token's worker skips the other
    // team's run and the run acting as mallory (the token's creator is the admin), and gets the run acting as
    // its creator and the plain one
    const c = await welcomed(s, token, 'shared-box', ['command'], 4);
    const first = await c.next('assignment');
    const second = await c.next('assignment');
    expect([first.plan.runId, second.plan.runId]).toEqual([actingAsAdmin.run.id, plain]);
    expect((await s.api('GET', `/agent/runs/${foreign}`, undefined, other)).body.state).toBe('QUEUED');
    expect((await s.api('GET', `/agent/runs/${actingAsMallory.run.id}`, undefined, admin)).body.state).toBe('QUEUED');
    // and the run says what it waits for, while the worker is present: it heartbeats as a real worker does
    // (a connection unheard of for 3 heartbeats counts as gone, and the run would wait for one to connect)
    const running = [first.execution_id, second.execution_id];
    const beat = () => c.send({ type: 'heartbeat', running, load: running.length });
    beat();
    const beating = setInterval(beat, 100);
    const waiting = await whenRunsTold(s, 'the waiting message', async () => {
      const r = (await s.api('GET', `/agent/runs/${actingAsMallory.run.id}`, undefined, admin)).body;
      return r.status_message?.message?.includes('team admin key') ? r : undefined;
    }).finally(() => clearInterval(beating));
    expect(waiting.status_message.message).toContain('acts as a member (credentialStrategy CREATOR)');
    c.ws.close();

    // an admin key's worker gets the run acting as a member
    const byAdmin = await welcomed(s, admin, 'shared-box');
    const adminAssignment = await byAdmin.next('assignment');
    expect(adminAssignment.plan.runId).toBe(actingAsMallory.run.id);
    byAdmin.send({ type: 'claimed', execution_id: adminAssignment.execution_id, workspace: '/w/admin' });
    await waitForState(s, actingAsMallory.run.id, ['INPROGRESS'], 20_000, admin);
    // nor can the token's worker take over that execution by claiming to run it after a reconnect
    const usurper = await connect(s, token);
    if (!('ws' in usurper)) throw new Error('no connection');
    usurper.send({ ...hello('shared-box'), running: [adminAssignment.execution_id] });
    expect((await usurper.next('welcome')).stale).toEqual([adminAssignment.execution_id]);
    usurper.ws.close();
    byAdmin.ws.close();
    expect((await s.api('GET', `/agent/runs/${foreign}`, undefined, other)).body.state).toBe('QUEUED');
  });

  it('worker-token guessing is throttled per address: 429 + Retry-After; a right token from elsewhere connects', async () => {
    const token = (await s.api('POST', '/workers/tokens', { name: 'throttled', worker_ids: ['throttle-box'] }, admin))
      .body.token as string;
    const guesser = '127.0.0.5';
    const allowed = s.server.ctx.config.authFailureLimit;
    const statuses: number[] = [];
    let retryAfter: string | string[] | undefined;
    for (let i = 0; i < allowed + 30; i++) {
      // well-formed worker tokens (the prefix and length of real ones), all wrong
      const guess = `${token.slice(0, token.length - 8)}${String(i).padStart(8, '0')}`;
      const res = await connect(s, guess, guesser);
      if ('ws' in res) throw new Error('a guessed token connected');
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers?.['retry-after'];
    }
    expect(statuses.slice(0, allowed).every((st) => st === 401)).toBe(true);
    expect(statuses.slice(allowed).every((st) => st === 429)).toBe(true);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    // the right token is not even checked from the guesser's address (it has not connected yet)...
    expect(await connect(s, token, guesser)).toMatchObject({ status: 429 });
    // ...and connects from another address
    const c = await connect(s, token, '127.0.0.6');
    if (!('ws' in c)) throw new Error(`the right token was refused: ${c.status}`);
    c.send(hello('throttle-box'));
    await c.next('welcome');
    c.ws.close();
    // once it has worked, the guesser's neighbours behind the same address keep using it
    const again = await connect(s, token, guesser);
    if (!('ws' in again)) throw new Error(`a token in use was refused: ${again.status}`);
    again.ws.close();
  });
});
