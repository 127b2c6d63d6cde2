/**
 * Team isolation, route by route. ISOLATION below has one entry per registered route (method + pattern);
 * the first test fails when a route has no entry, or an entry names a route that no longer exists. When you
 * add a route, add its entry: say how a key of team B is kept away from team A's resources through it.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredRoutes } from '../../src/http/app.ts';
import { sealTranscriptToken } from '../../src/runs/transcript.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { ApiResponse, TestServer } from '../support/server.ts';

interface Fixture {
  s: TestServer;
  /** Team A (the default team; its admin key is also the instance admin) and its resources. */
  a: {
    admin: string;
    teamId: string;
    runId: string;
    sessionId: string;
    identityUid: string;
    identityPrincipal: string;
    keyId: string;
    artifactUid: string;
    scheduleId: string;
    secretName: string;
    downloadUrl: string;
  };
  /** Team B: an admin key and a member key. */
  b: { admin: string; member: string; teamId: string };
  /** A request with team B's admin key (API-relative path). */
  asB(method: string, path: string, body?: unknown): Promise<ApiResponse>;
  asA(method: string, path: string, body?: unknown): Promise<ApiResponse>;
}

type Kind =
  /** The route names a resource of a team: B gets 404 on A's, and A's resource is unchanged. */
  | 'team-resource'
  /** The route lists the caller's team's resources: A's never appear in B's answer. */
  | 'team-list'
  /** The route creates in the caller's team; A's ids named in the body answer 404. */
  | 'team-create'
  /** Only instance admins may use it: team keys get 403. */
  | 'instance-admin'
  /** Answers about the caller only. */
  | 'caller'
  /** Needs no API key; the reason says what keeps teams apart. */
  | 'public';

interface Probe {
  kind: Kind;
  why?: string;
  check(f: Fixture): Promise<void>;
}

async function expectNotFound(res: ApiResponse, what: string): Promise<void> {
  expect(res.status, `${what}: ${res.text}`).toBe(404);
  expect(res.body.status).toBe(404);
}

const idsOf = (items: { run_id?: string; uid?: string; id?: string; name?: string }[]): string[] =>
  items.map((i) => i.run_id ?? i.uid ?? i.id ?? i.name ?? '');

async function runState(f: Fixture): Promise<string> {
  return (await f.asA('GET', `/agent/runs/${f.a.runId}`)).body.state;
}

/** Team A's webhook with one accepted delivery, and an automation on it (made on first use, straight in the tables). */
const teamAWebhooks = new WeakMap<Fixture, Promise<{ uid: string; deliveryId: string; automationId: string }>>();
function teamAWebhook(f: Fixture): Promise<{ uid: string; deliveryId: string; automationId: string }> {
  let made = teamAWebhooks.get(f);
  if (!made) {
    made = (async () => {
      const db = f.s.server.ctx.db;
      const ids = {
        uid: 'wh_0000000000000000000000isoa',
        deliveryId: 'dlv_000000000000000000000isoa',
        automationId: 'auto_00000000000000000000isoa',
      };
      await db.query(
        `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, secret_name) VALUES ($1, $2, 'fac_a', 'a-hook', 'webhooks/a-hook.yaml', 'token', 'a-secret')`,
        [ids.uid, f.a.teamId],
      );
      await db.query(
        `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, identity, size, received_at, payload)
         VALUES ($1, $2, $3, 'fac_a', 'a-hook', 'accepted', 'a', 2, now(), '\\x7b7d')`,
        [ids.deliveryId, ids.uid, f.a.teamId],
      );
      await db.query(
        `INSERT INTO automations (id, team_id, factory_id, name, file, prompt) VALUES ($1, $2, 'fac_a', 'a-auto', 'automations/a-auto/automation.md', 'p')`,
        [ids.automationId, f.a.teamId],
      );
      await db.query(
        'INSERT INTO automation_webhook_triggers (automation_id, webhook_uid, trigger_index) VALUES ($1, $2, 0)',
        [ids.automationId, ids.uid],
      );
      return ids;
    })();
    teamAWebhooks.set(f, made);
  }
  return made;
}

interface ConsoleIds {
  factoryId: string;
  webhookUid: string;
  deliveryId: string;
  automationId: string;
  runId: string;
}

async function consoleIds(f: Fixture): Promise<ConsoleIds> {
  const hook = await teamAWebhook(f);
  return {
    factoryId: 'fac_a',
    webhookUid: hook.uid,
    deliveryId: hook.deliveryId,
    automationId: hook.automationId,
    runId: f.a.runId,
  };
}

interface ConsoleSessionCookie {
  cookie: string;
  csrf: string;
}

const consoleSessions = new Map<string, Promise<ConsoleSessionCookie>>();
function consoleSession(f: Fixture, key: string): Promise<ConsoleSessionCookie> {
  let made = consoleSessions.get(key);
  if (!made) {
    made = (async () => {
      const signIn = await fetch(`${f.s.url}/console/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ api_key: key }).toString(),
        redirect: 'manual',
      });
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      const page = await (await fetch(`${f.s.url}/`, { headers: { cookie } })).text();
      return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page)![1]! };
    })();
    consoleSessions.set(key, made);
  }
  return made;
}

async function consoleRequest(
  f: Fixture,
  method: string,
  path: string,
  session?: ConsoleSessionCookie,
  form: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${f.s.url}${path}`, {
    method,
    redirect: 'manual',
    headers: {
      ...(session ? { cookie: session.cookie } : {}),
      ...(method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(method === 'POST'
      ? { body: new URLSearchParams({ ...(session ? { csrf: session.csrf } : {}), ...form }).toString() }
      : {}),
    signal: AbortSignal.timeout(10_000),
  });
  // a run's event stream stays open: its status line is the answer
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, text: '' };
  }
  return { status: res.status, text: await res.text() };
}

/** Team A's Slack connection (made on first use). */
const teamAConnections = new Map<Fixture, Promise<{ id: string; eventsUrl: string }>>();
function teamAConnection(f: Fixture): Promise<{ id: string; eventsUrl: string }> {
  let made = teamAConnections.get(f);
  if (!made) {
    made = (async () => {
      await f.asA('PUT', '/secrets/a-slack-signing', { value: 'a-signing-secret' });
      const res = await f.asA('PUT', '/integrations/slack', { signing_secret_name: 'a-slack-signing' });
      expect(res.status, res.text).toBe(200);
      return { id: res.body.id as string, eventsUrl: res.body.events_url as string };
    })();
    teamAConnections.set(f, made);
  }
  return made;
}

/** An accepted event of team A's Slack connection (sent on first use): its delivery id. */
const teamASlackDeliveries = new Map<Fixture, Promise<string>>();
function teamASlackDelivery(f: Fixture): Promise<string> {
  let made = teamASlackDeliveries.get(f);
  if (!made) {
    made = (async () => {
      const { eventsUrl } = await teamAConnection(f);
      const body = JSON.stringify({
        type: 'event_callback',
        team_id: 'T1',
        event_id: 'EvIso1',
        event: { type: 'app_mention' },
      });
      const at = String(Math.floor(Date.now() / 1000));
      const signature = createHmac('sha256', 'a-signing-secret').update(`v0:${at}:${body}`).digest('hex');
      const sent = await request(eventsUrl, {
        method: 'POST',
        body,
        headers: { 'x-slack-request-timestamp': at, 'x-slack-signature': `v0=${signature}` },
      });
      expect(sent.status, sent.text).toBe(202);
      return sent.body.delivery_id as string;
    })();
    teamASlackDeliveries.set(f, made);
  }
  return made;
}

/** A GitHub identity a member of team A linked (made on first use, straight in the table). */
const teamAIdentities = new WeakMap<Fixture, Promise<void>>();
function teamAIdentity(f: Fixture): Promise<void> {
  let made = teamAIdentities.get(f);
  if (!made) {
    made = f.s.server.ctx.db
      .query(
        `INSERT INTO integration_identities (team_id, subject_id, subject_name, provider, secret_name, external_id)
         VALUES ($1, 'usr_isolation_a', 'a member', 'github', $2, 'a-login')`,
        [f.a.teamId, f.a.secretName],
      )
      .then(() => undefined);
    teamAIdentities.set(f, made);
  }
  return made;
}

async function teamAIdentityListed(f: Fixture): Promise<void> {
  const listed = (await f.asA('GET', '/integrations/github/identities')).body.identities as { account_id: string }[];
  expect(listed.map((i) => i.account_id)).toContain('a-login');
}

const ISOLATION: Record<string, Probe> = {
  'GET /healthz': {
    kind: 'public',
    why: 'liveness only; reveals nothing',
    check: async (f) => expect((await request(`${f.s.url}/healthz`)).status).toBe(200),
  },
  'GET /readyz': {
    kind: 'public',
    why: 'readiness only: which checks pass',
    check: async (f) => expect((await request(`${f.s.url}/readyz`)).status).toBe(200),
  },
  'GET /metrics': {
    kind: 'public',
    why: 'Prometheus scrape: instance-wide counts by label and state, no team, factory or run identifiers',
    check: async (f) => expect((await request(`${f.s.url}/metrics`)).text).not.toContain(f.a.teamId),
  },
  'GET /docs/errors': {
    kind: 'public',
    why: 'the error documentation problem types point at, the same for everyone',
    check: async (f) => expect((await request(`${f.s.url}/docs/errors`)).status).toBe(200),
  },
  'GET /api/v1/openapi.json': {
    kind: 'public',
    why: 'the API description, the same for everyone',
    check: async (f) => expect((await request(`${f.s.apiUrl}/openapi.json`)).body.openapi).toBe('3.1.0'),
  },
  'GET /sessions/:sessionId': {
    kind: 'public',
    why: 'a link signed for one session and a lifetime is the capability; unsigned ids and run ids open nothing',
    check: async (f) => {
      expect((await request(`${f.s.url}/sessions/${f.a.runId}`)).status).toBe(404);
      expect((await request(`${f.s.url}/sessions/${f.a.sessionId}`)).status).toBe(404);
      expect((await request(`${f.s.url}/sessions/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    },
  },

  // identity
  'GET /api/v1/whoami': {
    kind: 'caller',
    check: async (f) => expect((await f.asB('GET', '/whoami')).body.team.id).toBe(f.b.teamId),
  },
  'GET /api/v1/api-keys': {
    kind: 'team-list',
    check: async (f) => {
      const keys = (await f.asB('GET', '/api-keys')).body.api_keys as { id: string }[];
      expect(keys.length).toBeGreaterThan(0);
      expect(idsOf(keys)).not.toContain(f.a.keyId);
    },
  },
  'POST /api/v1/api-keys': {
    kind: 'team-create',
    check: async (f) => {
      await expectNotFound(
        await f.asB('POST', '/api-keys', { name: 'x', principal_id: f.a.identityPrincipal }),
        'key for a principal of A',
      );
    },
  },
  'DELETE /api/v1/api-keys/:keyId': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('DELETE', `/api-keys/${f.a.keyId}`), 'revoke A key');
      const still = (await f.asA('GET', '/api-keys')).body.api_keys.find((k: { id: string }) => k.id === f.a.keyId);
      expect(still.revoked_at).toBeNull();
    },
  },
  'POST /api/v1/teams': {
    kind: 'instance-admin',
    check: async (f) => {
      expect((await f.asB('POST', '/teams', { name: 'b-made' })).status).toBe(403);
      expect((await f.s.api('POST', '/teams', { name: 'b-made' }, f.b.member)).status).toBe(403);
    },
  },
  'GET /api/v1/teams': {
    kind: 'instance-admin',
    check: async (f) => expect((await f.asB('GET', '/teams')).status).toBe(403),
  },

  // agent identities
  'POST /api/v1/agent/identities': {
    kind: 'team-create',
    check: async (f) => {
      const created = await f.asB('POST', '/agent/identities', { name: 'b-bot' });
      expect(created.status).toBe(201);
      expect(idsOf((await f.asA('GET', '/agent/identities')).body.agents)).not.toContain(created.body.uid);
    },
  },
  'GET /api/v1/agent/identities': {
    kind: 'team-list',
    check: async (f) =>
      expect(idsOf((await f.asB('GET', '/agent/identities')).body.agents)).not.toContain(f.a.identityUid),
  },
  'GET /api/v1/agent/identities/:uid': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/identities/${f.a.identityUid}`), 'get A identity'),
  },
  'PUT /api/v1/agent/identities/:uid': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(
        await f.asB('PUT', `/agent/identities/${f.a.identityUid}`, { name: 'taken-over' }),
        'rename A identity',
      );
      expect((await f.asA('GET', `/agent/identities/${f.a.identityUid}`)).body.name).toBe('a-bot');
    },
  },
  'DELETE /api/v1/agent/identities/:uid': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('DELETE', `/agent/identities/${f.a.identityUid}`), 'delete A identity');
      expect((await f.asA('GET', `/agent/identities/${f.a.identityUid}`)).status).toBe(200);
    },
  },

  // runs
  'POST /api/v1/agent/runs': {
    kind: 'team-create',
    check: async (f) => {
      await expectNotFound(
        await f.asB('POST', '/agent/runs', { prompt: 'x', agent_identity_uid: f.a.identityUid }),
        'run as A identity',
      );
      await expectNotFound(
        await f.asB('POST', '/agent/runs', { prompt: 'x', parent_run_id: f.a.runId }),
        'run under A parent',
      );
      await expectNotFound(
        await f.asB('POST', '/agent/runs', { prompt: 'x', conversation_id: f.a.runId }),
        'run continuing A conversation',
      );
      await expectNotFound(
        await f.s.api(
          'POST',
          '/agent/runs',
          {
            prompt: 'x',
            config: { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: f.a.secretName } },
          },
          f.b.member,
        ),
        'run with A secret (B member)',
      );
      const own = await f.asB('POST', '/agent/runs', { prompt: 'b run' });
      expect((await f.asA('GET', `/agent/runs/${own.body.run_id}`)).status).toBe(404);
    },
  },
  'POST /api/v1/agent/run': {
    kind: 'team-create',
    check: async (f) =>
      expectNotFound(await f.asB('POST', '/agent/run', { prompt: 'x', agent_identity_uid: f.a.identityUid }), 'alias'),
  },
  'GET /api/v1/agent/runs': {
    kind: 'team-list',
    check: async (f) => {
      for (const query of ['', `?ancestor_run_id=${f.a.runId}`, `?creator=${f.a.identityPrincipal}`, '?limit=500']) {
        expect(idsOf((await f.asB('GET', `/agent/runs${query}`)).body.runs)).not.toContain(f.a.runId);
      }
    },
  },
  'GET /api/v1/agent/runs/:runId': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}`), 'get A run'),
  },
  'GET /api/v1/agent/tasks': {
    kind: 'team-list',
    check: async (f) => expect(idsOf((await f.asB('GET', '/agent/tasks')).body.tasks)).not.toContain(f.a.runId),
  },
  'GET /api/v1/agent/tasks/:runId': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/tasks/${f.a.runId}`), 'legacy get'),
  },
  'POST /api/v1/agent/runs/:runId/cancel': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('POST', `/agent/runs/${f.a.runId}/cancel`), 'cancel A run');
      expect(await runState(f)).toBe('QUEUED');
    },
  },
  'POST /api/v1/agent/runs/:runId/followups': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(
        await f.asB('POST', `/agent/runs/${f.a.runId}/followups`, { message: 'hijack' }),
        'follow-up',
      );
      const messages = (await f.asA('GET', `/agent/runs/${f.a.runId}/followups`)).body.followups.map(
        (x: { message: string }) => x.message,
      );
      expect(messages).not.toContain('hijack');
    },
  },
  'GET /api/v1/agent/runs/:runId/tree': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/tree`), 'tree of A run'),
  },
  'GET /api/v1/agent/runs/:runId/scores': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/scores`), 'scores of A run'),
  },
  'GET /api/v1/agent/scores': {
    kind: 'team-list',
    check: async (f) => {
      await f.s.server.ctx.db.query(
        `INSERT INTO run_scores (run_id, scorer, team_id, factory_id, agent, status, label, score, passed, reason, judge_model)
         VALUES ($1, 'iso-scorer', $2, 'fac_a', 'a-agent', 'scored', 'good', 1, true, 'fine', 'm') ON CONFLICT DO NOTHING`,
        [f.a.runId, f.a.teamId],
      );
      const scorers = (body: { totals: { scorer: string }[] }) => body.totals.map((t) => t.scorer);
      expect(scorers((await f.asA('GET', '/agent/scores')).body)).toContain('iso-scorer');
      expect(scorers((await f.asB('GET', '/agent/scores')).body)).not.toContain('iso-scorer');
    },
  },
  'GET /api/v1/agent/runs/:runId/followups': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/followups`), 'list follow-ups'),
  },
  'GET /api/v1/agent/runs/:runId/handoff/attachments': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/handoff/attachments`), 'attachments'),
  },
  'GET /api/v1/agent/attachments/:token': {
    kind: 'public',
    why: 'the token is sealed with the master key (AES-GCM) and names team, run, file and expiry; it cannot be made or altered',
    check: async (f) => {
      expect((await request(f.a.downloadUrl)).status).toBe(200);
      const forged = f.a.downloadUrl.replace(/.{6}$/, 'AAAAAA');
      expect((await request(forged)).status).toBe(404);
    },
  },
  'GET /api/v1/agent': {
    kind: 'team-list',
    check: async (f) =>
      expect((await f.asB('GET', '/agent')).body.agents.map((a: { name: string }) => a.name)).not.toContain('a-agent'),
  },
  'GET /api/v1/agent/models': {
    kind: 'caller',
    why: 'instance configuration, no team data',
    check: async (f) => expect((await f.asB('GET', '/agent/models')).status).toBe(200),
  },
  'GET /api/v1/agent/environments': {
    kind: 'team-list',
    check: async (f) => expect((await f.asB('GET', '/agent/environments')).body.environments).toEqual([]),
  },
  'GET /api/v1/agent/artifacts/:artifactUid': {
    kind: 'team-resource',
    check: async (f) => {
      expect((await f.asA('GET', `/agent/artifacts/${f.a.artifactUid}`)).status).toBe(200);
      await expectNotFound(await f.asB('GET', `/agent/artifacts/${f.a.artifactUid}`), 'artifact');
    },
  },
  'GET /api/v1/agent/artifacts/:artifactUid/download': {
    kind: 'public',
    why: "a download URL signed for one artifact and an expiry is the credential; unsigned, forged or another artifact's signature opens nothing",
    check: async (f) => {
      expect((await request(`${f.s.apiUrl}/agent/artifacts/${f.a.artifactUid}/download`)).status).toBe(403);
      const forged = await request(
        `${f.s.apiUrl}/agent/artifacts/${f.a.artifactUid}/download?expires=9999999999&signature=${'0'.repeat(64)}`,
      );
      expect(forged.status).toBe(403);
    },
  },
  'GET /api/v1/agent/sessions/:sessionUuid/redirect': {
    kind: 'public',
    why: 'always answers {} and reveals nothing about the session',
    check: async (f) =>
      expect((await request(`${f.s.apiUrl}/agent/sessions/${f.a.sessionId}/redirect`)).body).toEqual({}),
  },
  'GET /api/v1/agent/conversations/:conversationId/redirect': {
    kind: 'public',
    why: 'always answers {} and reveals nothing about the conversation',
    check: async (f) =>
      expect((await request(`${f.s.apiUrl}/agent/conversations/${f.a.runId}/redirect`)).body).toEqual({}),
  },

  // run execution (src/execution, src/runs/events*, src/runs/conversation*)
  'GET /api/v1/agent/runs/:runId/events': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/events?follow=false`), 'event stream'),
  },
  'GET /api/v1/agent/runs/:runId/events/:sequence': {
    kind: 'team-resource',
    check: async (f) => {
      await f.asA('POST', `/agent/events/${f.a.runId}`, { event_type: 'run_in_progress' });
      const sequence = (await f.asA('GET', `/agent/events?run_ids=${f.a.runId}`)).body[0].sequence;
      expect((await f.asA('GET', `/agent/runs/${f.a.runId}/events/${sequence}`)).status).toBe(200);
      await expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/events/${sequence}`), 'one event');
    },
  },
  'GET /api/v1/agent/events': {
    kind: 'team-list',
    check: async (f) => {
      await f.asA('POST', `/agent/events/${f.a.runId}`, { event_type: 'run_in_progress' });
      expect((await f.asA('GET', `/agent/events?run_ids=${f.a.runId}`)).body.length).toBeGreaterThan(0);
      expect((await f.asB('GET', `/agent/events?run_ids=${f.a.runId}`)).body).toEqual([]);
    },
  },
  'POST /api/v1/agent/events/:runId': {
    kind: 'team-resource',
    check: async (f) => {
      const before = (await f.asA('GET', `/agent/events?run_ids=${f.a.runId}&limit=500`)).body.length;
      await expectNotFound(
        await f.asB('POST', `/agent/events/${f.a.runId}`, { event_type: 'run_cancelled' }),
        'report an event',
      );
      expect((await f.asA('GET', `/agent/events?run_ids=${f.a.runId}&limit=500`)).body.length).toBe(before);
      expect(await runState(f)).toBe('QUEUED');
    },
  },
  'GET /api/v1/agent/runs/:runId/conversation': {
    kind: 'team-resource',
    check: async (f) => {
      expect((await f.asA('GET', `/agent/runs/${f.a.runId}/conversation`)).status).toBe(200);
      await expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/conversation`), 'conversation');
    },
  },
  'GET /api/v1/agent/conversations/:conversationId': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/conversations/${f.a.runId}`), 'conversation by id'),
  },
  'GET /api/v1/agent/runs/:runId/transcript': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/runs/${f.a.runId}/transcript`), 'transcript'),
  },
  'GET /api/v1/agent/transcripts/:token': {
    kind: 'public',
    why: 'the token is sealed with the master key (AES-GCM) and names team, run and expiry; it cannot be made or altered',
    check: async (f) => {
      const token = sealTranscriptToken(f.s.server.ctx.cipher, f.a.teamId, f.a.runId, Date.now() + 60_000);
      expect((await request(`${f.s.apiUrl}/agent/transcripts/${token}`)).status).toBe(200);
      expect((await request(`${f.s.apiUrl}/agent/transcripts/${token.replace(/.{6}$/, 'AAAAAA')}`)).status).toBe(404);
      const otherTeam = sealTranscriptToken(f.s.server.ctx.cipher, f.b.teamId, f.a.runId, Date.now() + 60_000);
      expect((await request(`${f.s.apiUrl}/agent/transcripts/${otherTeam}`)).status).toBe(404);
    },
  },
  'POST /api/v1/workers/tokens': {
    kind: 'team-create',
    check: async (f) => {
      // a token of B registers B's workers only: A's run for the same worker id is never B's to claim
      const made = await f.asB('POST', '/workers/tokens', { name: 'b box', worker_ids: ['a-box'] });
      expect(made.status, made.text).toBe(201);
      const row = await f.s.server.ctx.db.query<{ team_id: string }>(
        'SELECT team_id FROM worker_tokens WHERE id = $1',
        [made.body.id],
      );
      expect(row.rows[0]!.team_id).toBe(f.b.teamId);
    },
  },
  'GET /api/v1/workers/tokens': {
    kind: 'team-list',
    check: async (f) => {
      const a = await f.asA('POST', '/workers/tokens', { name: 'a box', worker_ids: ['a-box'] });
      const listed = (await f.asB('GET', '/workers/tokens')).body.worker_tokens as { id: string }[];
      expect(idsOf(listed)).not.toContain(a.body.id);
    },
  },
  'DELETE /api/v1/workers/tokens/:tokenId': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await f.asA('POST', '/workers/tokens', { name: 'a box 2', worker_ids: ['a-box'] });
      await expectNotFound(await f.asB('DELETE', `/workers/tokens/${a.body.id}`), "revoke A's worker token");
      const still = (await f.asA('GET', '/workers/tokens')).body.worker_tokens.find(
        (t: { id: string }) => t.id === a.body.id,
      );
      expect(still.revoked_at).toBeNull();
    },
  },
  'GET /api/v1/workers': {
    kind: 'team-list',
    check: async (f) => {
      await f.s.server.ctx.db.query(
        `INSERT INTO worker_connections (id, team_id, worker_id, capacity, protocol, server_id) VALUES ('wrk_isolation_a', $1, 'a-box', 1, 1, 'test')
         ON CONFLICT DO NOTHING`,
        [f.a.teamId],
      );
      expect((await f.asA('GET', '/workers')).body.workers.map((w: { worker_id: string }) => w.worker_id)).toContain(
        'a-box',
      );
      expect(
        (await f.asB('GET', '/workers')).body.workers.map((w: { worker_id: string }) => w.worker_id),
      ).not.toContain('a-box');
    },
  },

  // secrets: names are per team, so B's PUT of the same name makes B's own secret
  'GET /api/v1/secrets': {
    kind: 'team-list',
    check: async (f) => expect(idsOf((await f.asB('GET', '/secrets')).body.secrets)).not.toContain(f.a.secretName),
  },
  'GET /api/v1/secrets/:name': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/secrets/${f.a.secretName}`), 'get A secret'),
  },
  'DELETE /api/v1/secrets/:name': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('DELETE', `/secrets/${f.a.secretName}`), 'delete A secret');
      expect((await f.asA('GET', `/secrets/${f.a.secretName}`)).status).toBe(200);
    },
  },
  'PUT /api/v1/secrets/:name': {
    kind: 'team-resource',
    check: async (f) => {
      const before = (await f.asA('GET', `/secrets/${f.a.secretName}`)).body;
      expect((await f.asB('PUT', `/secrets/${f.a.secretName}`, { value: 'b-value' })).status).toBe(201);
      expect((await f.asA('GET', `/secrets/${f.a.secretName}`)).body).toEqual(before);
    },
  },

  // schedules
  'POST /api/v1/agent/schedules': {
    kind: 'team-create',
    check: async (f) => {
      const created = await f.asB('POST', '/agent/schedules', {
        name: 'b-nightly',
        cron_schedule: '0 9 * * *',
        prompt: 'b',
      });
      expect(created.status).toBe(201);
      expect((await f.asA('GET', `/agent/schedules/${created.body.id}`)).status).toBe(404);
    },
  },
  'GET /api/v1/agent/schedules': {
    kind: 'team-list',
    check: async (f) =>
      expect(idsOf((await f.asB('GET', '/agent/schedules')).body.schedules)).not.toContain(f.a.scheduleId),
  },
  'GET /api/v1/agent/schedules/:scheduleId': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/agent/schedules/${f.a.scheduleId}`), 'get A schedule'),
  },
  'PUT /api/v1/agent/schedules/:scheduleId': {
    kind: 'team-resource',
    check: async (f) => {
      const body = { name: 'taken', cron_schedule: '0 1 * * *', enabled: true, prompt: 'x' };
      await expectNotFound(await f.asB('PUT', `/agent/schedules/${f.a.scheduleId}`, body), 'replace A schedule');
      expect((await f.asA('GET', `/agent/schedules/${f.a.scheduleId}`)).body.name).toBe('a-nightly');
    },
  },
  'DELETE /api/v1/agent/schedules/:scheduleId': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('DELETE', `/agent/schedules/${f.a.scheduleId}`), 'delete A schedule');
      expect((await f.asA('GET', `/agent/schedules/${f.a.scheduleId}`)).status).toBe(200);
    },
  },
  'POST /api/v1/agent/schedules/:scheduleId/pause': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('POST', `/agent/schedules/${f.a.scheduleId}/pause`), 'pause');
      expect((await f.asA('GET', `/agent/schedules/${f.a.scheduleId}`)).body.enabled).toBe(true);
    },
  },
  'POST /api/v1/agent/schedules/:scheduleId/resume': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('POST', `/agent/schedules/${f.a.scheduleId}/resume`), 'resume'),
  },

  // webhook delivery log and automations
  'GET /api/v1/webhooks/:uid/deliveries': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('GET', `/webhooks/${(await teamAWebhook(f)).uid}/deliveries`), 'A delivery log'),
  },
  'GET /api/v1/webhooks/:uid/lockouts': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      expect((await f.asA('GET', `/webhooks/${a.uid}/lockouts`)).status).toBe(200);
      await expectNotFound(await f.asB('GET', `/webhooks/${a.uid}/lockouts`), "A webhook's lockouts");
    },
  },
  'GET /api/v1/integrations/:provider/lockouts': {
    kind: 'team-resource',
    check: async (f) => {
      await teamAConnection(f);
      expect((await f.asA('GET', '/integrations/slack/lockouts')).status).toBe(200);
      await expectNotFound(await f.asB('GET', '/integrations/slack/lockouts'), "A connection's lockouts");
    },
  },
  'GET /api/v1/webhooks/:uid/deliveries/:deliveryId': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(await f.asB('GET', `/webhooks/${a.uid}/deliveries/${a.deliveryId}`), 'A delivery');
    },
  },
  'GET /api/v1/webhooks/:uid/deliveries/:deliveryId/payload': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(await f.asB('GET', `/webhooks/${a.uid}/deliveries/${a.deliveryId}/payload`), 'A payload');
    },
  },
  'POST /api/v1/webhooks/:uid/deliveries/:deliveryId/replay': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(await f.asB('POST', `/webhooks/${a.uid}/deliveries/${a.deliveryId}/replay`), 'A replay');
    },
  },
  'POST /api/v1/factories/:id/webhooks': {
    kind: 'team-create',
    check: async (f) =>
      expectNotFound(await f.asB('POST', '/factories/fac_a/webhooks', { name: 'b-hook' }), 'webhook on A factory'),
  },
  'GET /api/v1/webhooks/:uid': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', `/webhooks/${(await teamAWebhook(f)).uid}`), 'A webhook'),
  },
  'PATCH /api/v1/webhooks/:uid': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(await f.asB('PATCH', `/webhooks/${a.uid}`, { enabled: false }), 'disable A webhook');
      expect((await f.asA('GET', `/webhooks/${a.uid}`)).body.enabled).toBe(true);
    },
  },
  'DELETE /api/v1/webhooks/:uid': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(await f.asB('DELETE', `/webhooks/${a.uid}`), 'delete A webhook');
      expect((await f.asA('GET', `/webhooks/${a.uid}`)).body.state).toBe('enabled');
    },
  },
  'POST /api/v1/webhooks/:uid/rotate-secret': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(
        await f.asB('POST', `/webhooks/${(await teamAWebhook(f)).uid}/rotate-secret`, {}),
        'rotate A secret',
      ),
  },
  'GET /api/v1/automations/:id': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('GET', `/automations/${(await teamAWebhook(f)).automationId}`), 'A automation'),
  },
  'POST /api/v1/factories/:id/automations': {
    kind: 'team-create',
    check: async (f) => {
      const trigger = {
        provider: 'webhook',
        event: 'received',
        filter: { webhook_ids: [(await teamAWebhook(f)).uid] },
      };
      await expectNotFound(
        await f.asB('POST', '/factories/fac_a/automations', { name: 'b-auto', prompt: 'p', triggers: [trigger] }),
        'automation on A factory',
      );
    },
  },
  'PATCH /api/v1/automations/:id': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(
        await f.asB('PATCH', `/automations/${a.automationId}`, { enabled: false }),
        'disable A automation',
      );
      expect((await f.asA('GET', `/automations/${a.automationId}`)).body.enabled).toBe(true);
    },
  },
  'DELETE /api/v1/automations/:id': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(await f.asB('DELETE', `/automations/${a.automationId}`), 'delete A automation');
      expect((await f.asA('GET', `/automations/${a.automationId}`)).status).toBe(200);
    },
  },
  'POST /api/v1/automations/:id/test-filter': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAWebhook(f);
      await expectNotFound(
        await f.asB('POST', `/automations/${a.automationId}/test-filter`, { delivery_id: a.deliveryId }),
        'test A automation',
      );
    },
  },

  // factories (src/factories): every route under /factories/:id looks the factory up in the caller's team first
  'POST /api/v1/factories': {
    kind: 'team-create',
    check: async (f) => {
      const made = await f.asB('POST', '/factories', { name: 'a' });
      expect(made.status).toBe(201);
      expect(made.body.team_id).toBe(f.b.teamId);
      expect((await f.asA('GET', '/factories/fac_a')).body.name).toBe('a');
    },
  },
  'GET /api/v1/factories': {
    kind: 'team-list',
    check: async (f) => expect(idsOf((await f.asB('GET', '/factories')).body.factories)).not.toContain('fac_a'),
  },
  'GET /api/v1/factories/:id': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factories/fac_a'), 'A factory'),
  },
  'DELETE /api/v1/factories/:id': {
    kind: 'team-resource',
    check: async (f) => {
      await expectNotFound(await f.asB('DELETE', '/factories/fac_a'), 'delete A factory');
      expect((await f.asA('GET', '/factories/fac_a')).status).toBe(200);
    },
  },
  'GET /api/v1/factories/:id/applies': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factories/fac_a/applies'), 'A history'),
  },
  'POST /api/v1/factories/:id/sync': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('POST', '/factories/fac_a/sync'), 'sync A factory'),
  },
  'POST /api/v1/factories/:id/sync/push': {
    kind: 'public',
    why: "Git host push notifications: authenticated by the factory's own push secret (HMAC, token or bearer); only ever triggers a fetch; 404 without a push secret",
    check: async (f) =>
      expect((await request(`${f.s.apiUrl}/factories/fac_a/sync/push`, { method: 'POST', body: {} })).status).toBe(404),
  },
  'GET /api/v1/factories/:id/webhooks': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factories/fac_a/webhooks'), 'A webhooks'),
  },
  'GET /api/v1/factories/:id/automations': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factories/fac_a/automations'), 'A automations'),
  },
  'GET /api/v1/factories/:id/definition': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factories/fac_a/definition'), 'A definition'),
  },
  'GET /api/v1/factories/:id/revisions/:revision/files': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('GET', '/factories/fac_a/revisions/main%40sha1%3Aabc/files'), 'A revision files'),
  },
  'POST /api/v1/factories/:id/plan': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('POST', '/factories/fac_a/plan', { files: [] }), 'plan A'),
  },
  'POST /api/v1/factories/:id/apply': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('POST', '/factories/fac_a/apply', { files: [] }), 'apply A'),
  },
  'POST /api/v1/factories/:id/runs': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('POST', '/factories/fac_a/runs', { prompt: 'x' }), 'run on A'),
  },
  'POST /api/v1/factories/:id/benchmarks/:suite/runs': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('POST', '/factories/fac_a/benchmarks/smoke/runs', {}), 'benchmark on A'),
  },
  'GET /api/v1/factories/:id/benchmarks/:suite/runs': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factories/fac_a/benchmarks/smoke/runs'), 'A benchmarks'),
  },
  'GET /api/v1/factories/:id/benchmark-runs/:runId': {
    kind: 'team-resource',
    check: async (f) => {
      await f.s.server.ctx.db.query(
        `INSERT INTO benchmark_runs (id, team_id, factory_id, suite, suite_name, agent, judge_model)
         VALUES ('bch_isoa', $1, 'fac_a', 'smoke', 'Smoke', 'a', 'm') ON CONFLICT DO NOTHING`,
        [f.a.teamId],
      );
      expect((await f.asA('GET', '/factories/fac_a/benchmark-runs/bch_isoa')).status).toBe(200);
      await expectNotFound(await f.asB('GET', '/factories/fac_a/benchmark-runs/bch_isoa'), 'A benchmark run');
    },
  },
  'GET /api/v1/factory': {
    kind: 'team-list',
    check: async (f) => expect(idsOf((await f.asB('GET', '/factory')).body.factories)).not.toContain('fac_a'),
  },
  'GET /api/v1/factory/:uid': {
    kind: 'team-resource',
    check: async (f) => expectNotFound(await f.asB('GET', '/factory/fac_a'), 'A factory (product shape)'),
  },
  'POST /api/v1/factory/:uid/runs': {
    kind: 'team-resource',
    check: async (f) =>
      expectNotFound(await f.asB('POST', '/factory/fac_a/runs', { prompt: 'x' }), 'run on A (product shape)'),
  },

  // factory-file wire endpoints: the published schemas and a stateless dry run
  'GET /api/v1/factory-files/schemas': {
    kind: 'public',
    why: 'the published JSON Schemas, the same for everyone',
    check: async (f) => expect((await request(`${f.s.apiUrl}/factory-files/schemas`)).status).toBe(200),
  },
  'GET /api/v1/factory-files/schemas/:version': {
    kind: 'public',
    why: 'the published JSON Schemas, the same for everyone',
    check: async (f) => expect((await request(`${f.s.apiUrl}/factory-files/schemas/v1alpha1`)).status).toBe(200),
  },
  'GET /api/v1/factory-files/schemas/:version/:document': {
    kind: 'public',
    why: 'the published JSON Schemas, the same for everyone',
    check: async (f) =>
      expect((await request(`${f.s.apiUrl}/factory-files/schemas/v1alpha1/factory`)).status).toBe(200),
  },
  'POST /api/v1/mcp/factory': {
    kind: 'public',
    why: "authenticates itself: a run token is bound to its run's team and tree, an API key to its team's factories",
    check: async (f) => {
      const call = (key: string | undefined) =>
        request(`${f.s.apiUrl}/mcp/factory`, {
          method: 'POST',
          body: {
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'list_agents', arguments: { factory: 'fac_a' } },
          },
          headers: {
            accept: 'application/json, text/event-stream',
            ...(key ? { authorization: `Bearer ${key}` } : {}),
          },
        });
      expect((await call(undefined)).status).toBe(401);
      const asB = await call(f.b.admin);
      expect(asB.status, asB.text).toBe(200);
      expect(asB.body.result).toMatchObject({ isError: true });
      expect(asB.body.result.content[0].text).toBe('the team has no factory "fac_a"');
    },
  },
  'GET /api/v1/mcp/factory': {
    kind: 'public',
    why: 'answers 405 to everyone: the interface offers no server-initiated stream',
    check: async (f) => expect((await f.asB('GET', '/mcp/factory')).status).toBe(405),
  },
  'DELETE /api/v1/mcp/factory': {
    kind: 'public',
    why: 'answers 405 to everyone: the interface keeps no sessions',
    check: async (f) => expect((await f.asB('DELETE', '/mcp/factory')).status).toBe(405),
  },
  'GET /api/v1/agent/skills': {
    kind: 'team-list',
    check: async (f) => {
      const skills = (await f.asB('GET', '/agent/skills')).body.skills as { kind: string; factory?: string }[];
      expect(skills.some((k) => k.kind === 'bundled')).toBe(true);
      expect(skills.filter((k) => k.kind === 'factory')).toEqual([]);
    },
  },
  'POST /api/v1/factory-files/validate': {
    kind: 'public',
    why: "validates only the files sent; with a key, the team's own secrets are consulted, never another team's",
    check: async (f) => {
      await f.asA('PUT', '/secrets/a-only-secret', { value: 'v' });
      const files = [
        {
          path: 'factory.yaml',
          content: 'name: T\nrepositories:\n  - {owner: a, name: b}\nagentDefaults:\n  model: auto\n  runner: linux\n',
        },
        { path: 'runners/linux.yaml', content: 'platform:\n  linux:\n    dockerImage: node:24\n' },
        { path: 'agents/foreman/agent.md', content: '---\nagentType: FOREMAN\n---\nLead.\n' },
        { path: 'webhooks/w.yaml', content: 'authMode: token\nsecretName: a-only-secret\n' },
      ];
      const post = (key: string) =>
        request(`${f.s.apiUrl}/factory-files/validate`, {
          method: 'POST',
          body: { files },
          headers: { authorization: `Bearer ${key}` },
        });
      const asA = await post(f.a.admin);
      expect(asA.body.valid, JSON.stringify(asA.body.diagnostics)).toBe(true);
      // Team B has no secret of that name (team A's must not count).
      const asB = await post(f.b.member);
      expect(asB.body.valid).toBe(false);
      expect(JSON.stringify(asB.body.diagnostics)).toContain('a-only-secret');
    },
  },

  // the web console: pages behind a session cookie, rendered from the JSON API with the signed-in key
  ...Object.fromEntries(
    (
      [
        ['GET', '/console/factories/:id', (a: ConsoleIds) => `/console/factories/${a.factoryId}`],
        [
          'GET',
          '/console/factories/:id/files/*',
          (a: ConsoleIds) => `/console/factories/${a.factoryId}/files/factory.yaml`,
        ],
        [
          'GET',
          '/console/factories/:id/agents/:agent',
          (a: ConsoleIds) => `/console/factories/${a.factoryId}/agents/foreman`,
        ],
        ['POST', '/console/factories/:id/sync', (a: ConsoleIds) => `/console/factories/${a.factoryId}/sync`],
        ['POST', '/console/factories/:id/webhooks', (a: ConsoleIds) => `/console/factories/${a.factoryId}/webhooks`],
        [
          'POST',
          '/console/factories/:id/automations',
          (a: ConsoleIds) => `/console/factories/${a.factoryId}/automations`,
        ],
        ['POST', '/console/automations/:id', (a: ConsoleIds) => `/console/automations/${a.automationId}`],
        ['POST', '/console/automations/:id/delete', (a: ConsoleIds) => `/console/automations/${a.automationId}/delete`],
        [
          'GET',
          '/console/factories/:id/revisions/:revision',
          (a: ConsoleIds) => `/console/factories/${a.factoryId}/revisions/main%40sha1%3Aabc`,
        ],
        ['GET', '/console/webhooks/:uid', (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}`],
        [
          'GET',
          '/console/webhooks/:uid/deliveries.html',
          (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/deliveries.html`,
        ],
        [
          'GET',
          '/console/webhooks/:uid/deliveries/:did',
          (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/deliveries/${a.deliveryId}`,
        ],
        [
          'GET',
          '/console/webhooks/:uid/deliveries/:did/replay',
          (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/deliveries/${a.deliveryId}/replay`,
        ],
        [
          'POST',
          '/console/webhooks/:uid/deliveries/:did/replay',
          (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/deliveries/${a.deliveryId}/replay`,
        ],
        [
          'POST',
          '/console/webhooks/:uid/test-filter',
          (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/test-filter`,
        ],
        ['POST', '/console/webhooks/:uid/toggle', (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/toggle`],
        ['POST', '/console/webhooks/:uid/rotate', (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/rotate`],
        ['POST', '/console/webhooks/:uid/delete', (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/delete`],
        ['GET', '/console/runs/:id', (a: ConsoleIds) => `/console/runs/${a.runId}`],
        ['GET', '/console/runs/:id/live', (a: ConsoleIds) => `/console/runs/${a.runId}/live`],
        ['GET', '/console/runs/:id/cancel', (a: ConsoleIds) => `/console/runs/${a.runId}/cancel`],
        ['GET', '/console/runs/:id/events/:seq', (a: ConsoleIds) => `/console/runs/${a.runId}/events/1`],
        ['GET', '/console/runs/:id/events/:seq/body', (a: ConsoleIds) => `/console/runs/${a.runId}/events/1/body`],
        ['POST', '/console/factories/:id/runs', (a: ConsoleIds) => `/console/factories/${a.factoryId}/runs`],
        ['GET', '/console/webhooks/:uid/rotate', (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/rotate`],
        ['GET', '/console/webhooks/:uid/toggle', (a: ConsoleIds) => `/console/webhooks/${a.webhookUid}/toggle`],
        ['POST', '/console/runs/:id/cancel', (a: ConsoleIds) => `/console/runs/${a.runId}/cancel`],
        ['POST', '/console/runs/:id/followups', (a: ConsoleIds) => `/console/runs/${a.runId}/followups`],
      ] as const
    ).map(([method, url, path]): [string, Probe] => [
      `${method} ${url}`,
      {
        kind: 'public',
        why: "console page: needs a session cookie; it reads through the JSON API with the signed-in key, so another team's ids answer 404",
        check: async (f) => {
          const target = path(await consoleIds(f));
          const anonymous = await consoleRequest(f, method, target);
          expect(anonymous.status, `${method} ${target} without a session`).toBe(303);
          const b = await consoleSession(f, f.b.admin);
          const res = await consoleRequest(f, method, target, b);
          expect(res.status, `${method} ${target} as team B`).toBe(404);
          expect(res.text).not.toContain('team A work');
          if (method === 'POST') expect(await runState(f)).not.toBe('CANCELLED');
        },
      },
    ]),
  ),
  ...Object.fromEntries(
    (
      [
        ['GET', '/'],
        ['GET', '/console/runs'],
        ['GET', '/console/schedules'],
        ['GET', '/console/integrations'],
        ['POST', '/console/factories'],
      ] as const
    ).map(([method, url]): [string, Probe] => [
      `${method} ${url}`,
      {
        kind: 'public',
        why: "console page: the sign-in form without a session; with one, the signed-in key's own team through the JSON API",
        check: async (f) => {
          const b = await consoleSession(f, f.b.admin);
          const res = await consoleRequest(f, method, url, b, { name: 'b-factory' });
          expect([200, 303]).toContain(res.status);
          expect(res.text).not.toContain(f.a.runId);
          expect(res.text).not.toContain('a-nightly');
          expect(res.text).not.toContain('/console/factories/fac_a');
        },
      },
    ]),
  ),
  // Console pages and forms that act on the caller's own team (settings, actions with names another team could
  // guess): whatever team B asks through them, team A's run, secret, schedule and key stay as they were and none
  // of A's names shows in B's answer.
  ...Object.fromEntries(
    (
      [
        ['GET', '/favicon.ico', () => '/favicon.ico'],
        ['GET', '/console', () => '/console'],
        ['GET', '/console/*', () => '/console/nowhere'],
        ['GET', '/console/overview.html', () => '/console/overview.html'],
        ['GET', '/console/artifacts/:uid/download', (f: Fixture) => `/console/artifacts/${f.a.artifactUid}/download`],
        ['GET', '/console/artifacts/:uid/view', (f: Fixture) => `/console/artifacts/${f.a.artifactUid}/view`],
        ['POST', '/console/schedules', () => '/console/schedules'],
        ['POST', '/console/schedules/:id', (f: Fixture) => `/console/schedules/${f.a.scheduleId}`],
        ['GET', '/console/schedules/:id/delete', (f: Fixture) => `/console/schedules/${f.a.scheduleId}/delete`],
        ['POST', '/console/schedules/:id/delete', (f: Fixture) => `/console/schedules/${f.a.scheduleId}/delete`],
        ['POST', '/console/integrations/:provider', () => '/console/integrations/slack'],
        ['GET', '/console/integrations/:provider/deliveries', () => '/console/integrations/slack/deliveries'],
        [
          'GET',
          '/console/integrations/:provider/deliveries/:did',
          (f: Fixture) => teamASlackDelivery(f).then((id) => `/console/integrations/slack/deliveries/${id}`),
        ],
        [
          'GET',
          '/console/integrations/:provider/deliveries/:did/replay',
          (f: Fixture) => teamASlackDelivery(f).then((id) => `/console/integrations/slack/deliveries/${id}/replay`),
        ],
        [
          'POST',
          '/console/integrations/:provider/deliveries/:did/replay',
          (f: Fixture) => teamASlackDelivery(f).then((id) => `/console/integrations/slack/deliveries/${id}/replay`),
        ],
        ['GET', '/console/integrations/:provider/disconnect', () => '/console/integrations/slack/disconnect'],
        ['POST', '/console/integrations/:provider/disconnect', () => '/console/integrations/slack/disconnect'],
        ['GET', '/console/secrets', () => '/console/secrets'],
        ['POST', '/console/secrets', () => '/console/secrets'],
        ['GET', '/console/secrets/:name/delete', (f: Fixture) => `/console/secrets/${f.a.secretName}/delete`],
        ['POST', '/console/secrets/:name/delete', (f: Fixture) => `/console/secrets/${f.a.secretName}/delete`],
        ['GET', '/console/api-keys', () => '/console/api-keys'],
        ['POST', '/console/api-keys', () => '/console/api-keys'],
        ['GET', '/console/api-keys/:id/revoke', (f: Fixture) => `/console/api-keys/${f.a.keyId}/revoke`],
        ['POST', '/console/api-keys/:id/revoke', (f: Fixture) => `/console/api-keys/${f.a.keyId}/revoke`],
      ] as const
    ).map(([method, url, path]): [string, Probe] => [
      `${method} ${url}`,
      {
        kind: 'public',
        why: "console page or form: with a session it acts through the JSON API with the signed-in key, so only on the caller's own team",
        check: async (f) => {
          const target = await path(f);
          const b = await consoleSession(f, f.b.admin);
          const res = await consoleRequest(f, method, target, b, {
            name: 'b-thing',
            value: 'b-value',
            prompt: 'b',
            cron: '0 * * * *',
          });
          expect(res.status, `${method} ${target} as team B: ${res.text.slice(0, 200)}`).toBeLessThan(500);
          // (a page may repeat the id B asked for; it must show nothing of A's)
          for (const name of [f.a.runId, 'a-nightly']) expect(res.text).not.toContain(name);
          expect(await runState(f)).not.toBe('CANCELLED');
          expect((await f.asA('GET', `/secrets/${f.a.secretName}`)).status).toBe(200);
          expect((await f.asA('GET', `/agent/schedules/${f.a.scheduleId}`)).status).toBe(200);
          expect((await f.asA('GET', '/api-keys')).status).toBe(200);
        },
      },
    ]),
  ),
  'GET /console/assets/:file': {
    kind: 'public',
    why: "the console's stylesheet and script, the same for everyone",
    check: async (f) => {
      expect((await request(`${f.s.url}/console/assets/console.css`)).status).toBe(200);
      expect((await request(`${f.s.url}/console/assets/..%2Fhtml.ts`)).status).toBe(404);
    },
  },
  'POST /console/sign-in': {
    kind: 'public',
    why: 'exchanges an API key for a session cookie; a wrong key answers 401',
    check: async (f) => {
      const res = await consoleRequest(f, 'POST', '/console/sign-in', undefined, { api_key: 'ay_not-a-key' });
      expect(res.status).toBe(401);
    },
  },
  'POST /console/sign-out': {
    kind: 'public',
    why: "clears the caller's own session cookie (CSRF-checked)",
    check: async (f) => {
      const b = await consoleSession(f, f.b.admin);
      expect((await consoleRequest(f, 'POST', '/console/sign-out', { ...b, csrf: 'forged' })).status).toBe(403);
    },
  },
  'GET /api/v1/run-counts': {
    kind: 'team-list',
    check: async (f) => {
      expect((await f.asA('GET', '/run-counts')).body.total).toBeGreaterThan(0);
      // B's counts are B's own runs, whatever other probes made there
      const own = (await f.asB('GET', '/agent/runs?limit=500')).body.runs.length;
      expect((await f.asB('GET', '/run-counts')).body.total).toBe(own);
    },
  },
  'GET /api/v1/delivery-stats': {
    kind: 'team-list',
    check: async (f) => {
      await teamAWebhook(f);
      expect((await f.asA('GET', '/delivery-stats')).body.deliveries).toBeGreaterThan(0);
      expect((await f.asB('GET', '/delivery-stats')).body.deliveries).toBe(0);
    },
  },

  // provider connections: a team's own; events arrive on the connection's URL, verified by its signing secret
  'GET /api/v1/integrations': {
    kind: 'team-list',
    check: async (f) => {
      const a = await teamAConnection(f);
      expect(idsOf((await f.asA('GET', '/integrations')).body.integrations)).toContain(a.id);
      expect(idsOf((await f.asB('GET', '/integrations')).body.integrations)).not.toContain(a.id);
    },
  },
  'GET /api/v1/integrations/:provider': {
    kind: 'team-resource',
    check: async (f) => {
      await teamAConnection(f);
      await expectNotFound(await f.asB('GET', '/integrations/slack'), 'B reads slack');
    },
  },
  'PUT /api/v1/integrations/:provider': {
    kind: 'team-create',
    check: async (f) => {
      const a = await teamAConnection(f);
      // team A's secret names mean nothing in team B
      const res = await f.asB('PUT', '/integrations/linear', { webhook_secret_name: 'a-slack-signing' });
      expect(res.status, res.text).toBe(404);
      expect((await f.asA('GET', '/integrations/slack')).body.id).toBe(a.id);
    },
  },
  'GET /api/v1/integrations/:provider/deliveries': {
    kind: 'team-resource',
    check: async (f) => {
      await teamAConnection(f);
      expect((await f.asA('GET', '/integrations/slack/deliveries')).status).toBe(200);
      await expectNotFound(await f.asB('GET', '/integrations/slack/deliveries'), "B reads slack's delivery log");
    },
  },
  'GET /api/v1/integrations/:provider/deliveries/:deliveryId': {
    kind: 'team-resource',
    check: async (f) => {
      const path = `/integrations/slack/deliveries/${await teamASlackDelivery(f)}`;
      expect((await f.asA('GET', path)).status).toBe(200);
      await expectNotFound(await f.asB('GET', path), "B reads a delivery of A's slack connection");
    },
  },
  'GET /api/v1/integrations/:provider/deliveries/:deliveryId/automations': {
    kind: 'team-resource',
    check: async (f) => {
      const path = `/integrations/slack/deliveries/${await teamASlackDelivery(f)}/automations`;
      expect((await f.asA('GET', path)).status).toBe(200);
      await expectNotFound(await f.asB('GET', path), "B tests a delivery of A's slack connection");
    },
  },
  'POST /api/v1/integrations/:provider/deliveries/:deliveryId/replay': {
    kind: 'team-resource',
    check: async (f) => {
      const path = `/integrations/slack/deliveries/${await teamASlackDelivery(f)}/replay`;
      await expectNotFound(await f.asB('POST', path), "B replays a delivery of A's slack connection");
      const log = (await f.asA('GET', '/integrations/slack/deliveries')).body.deliveries as { replay_of?: string }[];
      expect(log.some((d) => d.replay_of)).toBe(false);
    },
  },
  'GET /api/v1/integrations/:provider/identities': {
    kind: 'team-list',
    check: async (f) => {
      await teamAIdentity(f);
      await teamAIdentityListed(f);
      expect((await f.asB('GET', '/integrations/github/identities')).body.identities).toEqual([]);
      expect((await f.s.api('GET', '/integrations/github/identities', undefined, f.b.member)).status).toBe(403);
    },
  },
  'GET /api/v1/integrations/:provider/identities/me': {
    kind: 'caller',
    check: async (f) => {
      await teamAIdentity(f);
      await expectNotFound(await f.asB('GET', '/integrations/github/identities/me'), "B reads A's identity");
    },
  },
  'PUT /api/v1/integrations/:provider/identities/me': {
    kind: 'team-create',
    check: async (f) => {
      // team A's secret names mean nothing in team B (and no provider is asked)
      expect((await f.asA('PUT', '/secrets/a-only-github-token', { value: 'ghp_a' })).status).toBeLessThan(300);
      const res = await f.asB('PUT', '/integrations/github/identities/me', { secret_name: 'a-only-github-token' });
      expect(res.status, res.text).toBe(404);
      expect(res.body.code).toBe('secret_not_found');
    },
  },
  'DELETE /api/v1/integrations/:provider/identities/me': {
    kind: 'caller',
    check: async (f) => {
      await teamAIdentity(f);
      await expectNotFound(await f.asB('DELETE', '/integrations/github/identities/me'), "B unlinks A's identity");
      await teamAIdentityListed(f);
    },
  },
  'DELETE /api/v1/integrations/:provider': {
    kind: 'team-resource',
    check: async (f) => {
      const a = await teamAConnection(f);
      await expectNotFound(await f.asB('DELETE', '/integrations/slack'), 'B deletes slack');
      expect((await f.asA('GET', '/integrations/slack')).body.id).toBe(a.id);
    },
  },
  ...Object.fromEntries(
    ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method): [string, Probe] => [
      `${method} /integrations/:provider/events/:connection`,
      {
        kind: 'public',
        why: "provider events: the connection id in the URL and the provider's signature with the connection's own secret",
        check: async (f) => {
          const a = await teamAConnection(f);
          const res = await request(a.eventsUrl, {
            method,
            ...(method === 'POST' ? { body: { type: 'event_callback' } } : {}),
          });
          expect([401, 405]).toContain(res.status);
          const unknown = await request(`${f.s.url}/integrations/slack/events/igc_00000000000000000000000000`, {
            method,
            ...(method === 'POST' ? { body: {} } : {}),
          });
          expect([404, 405]).toContain(unknown.status);
        },
      },
    ]),
  ),

  // webhook ingress: the UID (and, by mode, the secret) is the capability; no team key is involved
  ...Object.fromEntries(
    ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].flatMap((method) =>
      ['/webhooks/w/:uid', '/webhooks/w/:uid/:token'].map((url): [string, Probe] => [
        `${method} ${url}`,
        {
          kind: 'public',
          why: 'webhook ingress: authenticated by the webhook UID and its own secret, never by an API key',
          check: async (f) => {
            const res = await request(
              `${f.s.url}/webhooks/w/wh_00000000000000000000000000${url.endsWith(':token') ? '/t' : ''}`,
              {
                method,
                ...(method === 'POST' ? { body: {} } : {}),
              },
            );
            expect([404, 405]).toContain(res.status);
          },
        },
      ]),
    ),
  ),
};

describe.each(ENGINES)('team isolation on every route on %s', (engine) => {
  const f = {} as Fixture;

  beforeAll(async () => {
    const s = await startTestServer(engine);
    f.s = s;
    const asA = (method: string, path: string, body?: unknown) => s.api(method, path, body, s.adminKey);
    f.asA = asA;
    const teamA = (await asA('GET', '/whoami')).body.team.id as string;
    const team = await asA('POST', '/teams', { name: 'team-b' });
    const bAdmin = team.body.admin_key.key as string;
    const bMember = (await s.api('POST', '/api-keys', { name: 'b member', role: 'member' }, bAdmin)).body.key as string;
    f.b = { admin: bAdmin, member: bMember, teamId: team.body.team.id };
    f.asB = (method, path, body) => s.api(method, path, body, bAdmin);

    const identity = (await asA('POST', '/agent/identities', { name: 'a-bot' })).body;
    const key = (await asA('POST', '/api-keys', { name: 'a key', principal_id: identity.principal_id })).body;
    const run = (
      await asA('POST', '/agent/runs', {
        prompt: 'team A work',
        agent_identity_uid: identity.uid,
        attachments: [{ file_name: 'a.txt', mime_type: 'text/plain', data: Buffer.from('a').toString('base64') }],
      })
    ).body;
    await asA('POST', `/agent/runs/${run.run_id}/followups`, { message: 'a follow-up' });
    const child = (await asA('POST', '/agent/runs', { prompt: 'child', parent_run_id: run.run_id })).body;
    expect(child.run_id).toBeTruthy();
    await s.server.ctx.db.query('UPDATE runs SET artifacts = $2 WHERE id = $1', [
      run.run_id,
      JSON.stringify([
        {
          artifact_type: 'FILE',
          created_at: '2026-01-01T00:00:00.000Z',
          data: { artifact_uid: 'art_a', filename: 'f' },
        },
      ]),
    ]);
    await s.server.ctx.db.query(
      `INSERT INTO factories (id, team_id, name, source, state, definition) VALUES ('fac_a', $1, 'a', '{"type":"managed"}', 'applied', $2)`,
      [teamA, JSON.stringify({ agents: [{ name: 'a-agent', prompt: 'p' }] })],
    );
    await asA('PUT', '/secrets/a-secret', { value: 'a-value' });
    const schedule = await asA('POST', '/agent/schedules', {
      name: 'a-nightly',
      cron_schedule: '0 9 * * *',
      prompt: 'a',
    });
    const attachments = (await asA('GET', `/agent/runs/${run.run_id}/handoff/attachments`)).body.attachments;
    f.a = {
      admin: s.adminKey,
      teamId: teamA,
      runId: run.run_id,
      sessionId: (await asA('GET', `/agent/runs/${run.run_id}`)).body.session_id,
      identityUid: identity.uid,
      identityPrincipal: identity.principal_id,
      keyId: key.id,
      artifactUid: 'art_a',
      scheduleId: schedule.body?.id,
      secretName: 'a-secret',
      downloadUrl: attachments[0].download_url,
    };
  });
  afterAll(async () => {
    await f.s?.close();
  });

  it('has an isolation entry for every registered route, and no entry for a route that does not exist', () => {
    const registered = registeredRoutes(f.s.server.app).map((r) => `${r.method} ${r.url}`);
    const missing = registered.filter((r) => !(r in ISOLATION));
    const stale = Object.keys(ISOLATION).filter((k) => !registered.includes(k));
    expect(missing, 'routes without an entry in ISOLATION (test/http/isolation.test.ts): add one').toEqual([]);
    expect(stale, 'ISOLATION entries for routes that are not registered: remove them').toEqual([]);
  });

  it('registers every public route on purpose (config.public or a root route) and marks it public here', () => {
    for (const route of registeredRoutes(f.s.server.app)) {
      const probe = ISOLATION[`${route.method} ${route.url}`];
      if (!probe) continue;
      expect(probe.kind === 'public', `${route.method} ${route.url}`).toBe(route.public);
      if (probe.kind === 'public') expect(probe.why, `${route.method} ${route.url} needs a reason`).toBeTruthy();
    }
  });

  it('refuses every non-public API route without a key', async () => {
    for (const route of registeredRoutes(f.s.server.app)) {
      if (route.public) continue;
      const path = route.url.replace(/:([A-Za-z]+)/g, 'x');
      const res = await request(`${f.s.url}${path}`, {
        method: route.method,
        ...(['POST', 'PUT'].includes(route.method) ? { body: {} } : {}),
      });
      expect(res.status, `${route.method} ${route.url}`).toBe(401);
    }
  });

  for (const [route, probe] of Object.entries(ISOLATION)) {
    it(`${route} (${probe.kind})`, async () => {
      await probe.check(f);
    });
  }
});
