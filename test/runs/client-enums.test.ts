import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODE_TABLE, RUN_SOURCE_TABLE } from '../../src/engine/client-enums.ts';
import type { RunSource } from '../../src/engine/client-enums.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)("runs served in the clients' enumerations on %s", (engine) => {
  let s: TestServer;
  const bySource = new Map<RunSource, string>();

  beforeAll(async () => {
    s = await startTestServer(engine);
    const teamId = (await s.api('GET', '/whoami')).body.team.id as string;
    for (const source of Object.keys(RUN_SOURCE_TABLE) as RunSource[]) {
      const { run: row } = await s.server.services.runs.create(
        { teamId, prompt: `from ${source}`, source, creator: null },
        { within: s.server.ctx.db },
      );
      bySource.set(source, row.id);
    }
  });
  afterAll(async () => {
    await s?.close();
  });

  const listed = async (query: string): Promise<string[]> => {
    const res = await s.api('GET', `/agent/runs?limit=100&${query}`);
    expect(res.status, res.text).toBe(200);
    return (res.body.runs as { run_id: string }[]).map((r) => r.run_id).sort();
  };

  it('serves every stored source as its client value, the stored one in source_detail', async () => {
    for (const [source, id] of bySource) {
      const run = (await s.api('GET', `/agent/runs/${id}`)).body;
      expect(run.source).toBe(RUN_SOURCE_TABLE[source]);
      if (RUN_SOURCE_TABLE[source] === source) expect(run).not.toHaveProperty('source_detail');
      else expect(run.source_detail).toBe(source);
    }
  });

  it('filters by a stored source (WEBHOOK) or by the client value (API selects every run served as API)', async () => {
    expect(await listed('source=WEBHOOK')).toEqual([bySource.get('WEBHOOK')]);
    expect(await listed('source=FACTORY')).toEqual([bySource.get('FACTORY')]);
    const servedAsApi = [...bySource].filter(([src]) => RUN_SOURCE_TABLE[src] === 'API').map(([, id]) => id);
    expect(await listed('source=API')).toEqual(servedAsApi.sort());
    expect(servedAsApi.length).toBeGreaterThanOrEqual(3);
    expect(await listed('source=SCHEDULED_AGENT')).toEqual([bySource.get('SCHEDULED_AGENT')]);
    // A value a newer client declares that no run here has: an empty page, not a 400.
    expect(await listed('source=JIRA')).toEqual([]);
    const bad = await s.api('GET', '/agent/runs?source=CARRIER_PIGEON');
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/source/);
  });

  it('a run starts a conversation named by its id; one created with conversation_id continues it', async () => {
    const first = (await s.api('POST', '/agent/runs', { prompt: 'start' })).body.run_id as string;
    expect((await s.api('GET', `/agent/runs/${first}`)).body.conversation_id).toBe(first);
    const next = await s.api('POST', '/agent/runs', { prompt: 'go on', conversation_id: first });
    expect(next.status, next.text).toBe(200);
    expect((await s.api('GET', `/agent/runs/${next.body.run_id}`)).body.conversation_id).toBe(first);
    // Naming the second run continues the same conversation, not a new one.
    const third = await s.api('POST', '/agent/runs', { prompt: 'and on', conversation_id: next.body.run_id });
    expect((await s.api('GET', `/agent/runs/${third.body.run_id}`)).body.conversation_id).toBe(first);
    const conversation = await s.api('GET', `/agent/conversations/${first}`);
    expect(conversation.status).toBe(200);
    expect(conversation.body.conversation_id).toBe(first);
    const missing = await s.api('POST', '/agent/runs', { prompt: 'x', conversation_id: 'conv-nope' });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/conversation_id/);
  });

  it('run_time is the time the executions took, not the span from the first start to the last end', async () => {
    const id = (await s.api('POST', '/agent/runs', { prompt: 'twice' })).body.run_id as string;
    const teamId = (await s.api('GET', '/whoami')).body.team.id as string;
    // Two executions of 90 s and 30 s, an hour apart (a follow-up continued the finished run).
    await s.server.ctx.db.query(
      `INSERT INTO executions (id, run_id, team_id, attempt, executor, harness, lease_expires_at, started_at, ended_at, outcome)
       VALUES ('exe_t1', $1, $2, 1, 'service:t', 'noop', now(), '2026-01-01T10:00:00Z', '2026-01-01T10:01:30Z', 'succeeded'),
              ('exe_t2', $1, $2, 2, 'service:t', 'noop', now(), '2026-01-01T11:00:00Z', '2026-01-01T11:00:30Z', 'succeeded')`,
      [id, teamId],
    );
    await s.server.ctx.db.query(
      `UPDATE runs SET state = 'SUCCEEDED', started_at = '2026-01-01T10:00:00Z', finished_at = '2026-01-01T11:00:30Z' WHERE id = $1`,
      [id],
    );
    expect((await s.api('GET', `/agent/runs/${id}`)).body.run_time).toBe('PT2M');
    const listed = (await s.api('GET', '/agent/runs?q=twice')).body.runs;
    expect(listed.map((r: { run_time?: string }) => r.run_time)).toEqual(['PT2M']);
    // A run that never started has none.
    const queued = (await s.api('POST', '/agent/runs', { prompt: 'waiting' })).body.run_id;
    expect((await s.api('GET', `/agent/runs/${queued}`)).body).not.toHaveProperty('run_time');
  });

  it('serves every recorded error code as a client code, the recorded one in error_detail, with retryable', async () => {
    const id = bySource.get('API')!;
    const served = async (code: string) => {
      await s.server.ctx.db.query(
        `UPDATE runs SET state = 'FAILED', status_message = jsonb_build_object('message', 'x', 'error_code', $2::text) WHERE id = $1`,
        [id, code],
      );
      return (await s.api('GET', `/agent/runs/${id}`)).body.status_message;
    };
    for (const [fine, client] of Object.entries(ERROR_CODE_TABLE)) {
      const message = await served(fine);
      expect(message.error_code, fine).toBe(client);
      if (client === fine) expect(message, fine).not.toHaveProperty('error_detail');
      else expect(message.error_detail, fine).toBe(fine);
      expect(typeof message.retryable).toBe('boolean');
    }
    expect(await served('agent_failed')).toEqual({
      message: 'x',
      error_code: 'internal_error',
      error_detail: 'agent_failed',
      retryable: true,
    });
    // A client code is served as it is; a code a self-hosted worker made up becomes internal_error.
    expect(await served('invalid_request')).toEqual({ message: 'x', error_code: 'invalid_request', retryable: false });
    expect(await served('gremlins_in_the_box')).toMatchObject({
      error_code: 'internal_error',
      error_detail: 'gremlins_in_the_box',
    });
  });
});
