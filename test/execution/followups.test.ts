/**
 * Follow-ups: to a running Claude Code agent they are handed over on stdin and taken at its next turn (same
 * execution); to a harness that takes no input while running (Codex) they wait, and the run continues in a
 * new execution that resumes the CLI's session; to a finished run they queue it again, and the new
 * execution resumes the session in a workspace that took over the previous one's files. Each follow-up
 * records the execution that consumed it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import {
  createRun,
  eventsOf,
  executionsOf,
  fakeRecords,
  startExecServer,
  waitForState,
  whenRunsTold,
} from './support.ts';
import type { ExecServer } from './support.ts';

describe.each(ENGINES)('follow-ups on %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(engine);
    await s.api('PUT', '/secrets/key', { value: 'sk-followups-0123456789' });
  });
  afterAll(async () => {
    await s?.close();
  });

  const config = (harness: string) => ({
    harness: { type: harness },
    harness_auth_secrets: { [`${harness}_auth_secret_name`]: 'key' },
  });

  async function consumers(runId: string): Promise<Record<string, string | null>> {
    const res = await s.server.ctx.db.query<{ message: string; consumed_by_execution: string | null }>(
      'SELECT message, consumed_by_execution FROM run_followups WHERE run_id = $1',
      [runId],
    );
    return Object.fromEntries(res.rows.map((r) => [r.message, r.consumed_by_execution]));
  }

  it('hands a follow-up to a running Claude Code agent at its next turn, in the same execution', async () => {
    const runId = await createRun(s, { prompt: 'First part WAIT 1.5', config: config('claude') });
    await waitForState(s, runId, ['INPROGRESS']);
    await whenRunsTold(s, 'the agent to be in its first turn', async () =>
      (await eventsOf(s, runId)).some((e) => e.type === 'session'),
    );
    const res = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'Second part, please' });
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('INPROGRESS');
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state).toBe('SUCCEEDED');
    const executions = await executionsOf(s, runId);
    expect(executions).toHaveLength(1);
    const turns = fakeRecords(executions[0]!.workspace!);
    expect(turns.map((t) => t.prompt)).toEqual(['First part WAIT 1.5', 'Second part, please']);
    expect(await consumers(runId)).toEqual({ 'Second part, please': executions[0]!.id });
    const listed = (await s.api('GET', `/agent/runs/${runId}/followups`)).body.followups;
    expect(listed[0].consumed_at).toEqual(expect.any(String));
    const events = await eventsOf(s, runId);
    expect(events.find((e) => e.type === 'followup')!.data).toMatchObject({
      message: 'Second part, please',
      delivery: 'live',
    });
    expect(events.filter((e) => e.type === 'result')).toHaveLength(2);
    const step = (await s.api('GET', `/agent/runs/${runId}/conversation`)).body.steps[0];
    const userTexts = step.messages
      .filter((m: { role: string }) => m.role === 'user')
      .map((m: { content: { text: string }[] }) => m.content[0]!.text);
    expect(userTexts).toEqual(['First part WAIT 1.5', 'Second part, please']);
  });

  it('continues a finished Claude Code run in a new execution that resumes its session and its workspace', async () => {
    const runId = await createRun(s, { prompt: 'Write the plan', config: config('claude') });
    await waitForState(s, runId, ['SUCCEEDED']);
    const [first] = await executionsOf(s, runId);
    const res = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'Now implement it' });
    expect(res.body.state).toBe('QUEUED');
    await whenRunsTold(s, 'the second execution to finish', async () => {
      const e = await executionsOf(s, runId);
      return e.length === 2 && e[1]!.ended_at !== null;
    });
    const run = (await s.api('GET', `/agent/runs/${runId}`)).body;
    expect(run.state).toBe('SUCCEEDED');
    expect(run.status_message.message).toContain('resumed with 2 earlier messages');
    const [, second] = await executionsOf(s, runId);
    expect(second!.attempt).toBe(2);
    expect(second!.agent_session_id).toBe(first!.agent_session_id);
    // the first execution's workspace moved into the second's
    const records = fakeRecords(second!.workspace!);
    expect(records).toHaveLength(2);
    expect(records[1].argv.slice(-2)).toEqual(['--resume', first!.agent_session_id]);
    expect(records[1].prompt).toBe('Now implement it');
    expect(await consumers(runId)).toEqual({ 'Now implement it': second!.id });
    const conversation = (await s.api('GET', `/agent/runs/${runId}/conversation`)).body;
    expect(conversation.steps.map((st: { id: string }) => st.id)).toEqual([first!.id, second!.id]);
  });

  it('keeps a follow-up to a running Codex agent for a new execution that resumes the thread', async () => {
    const runId = await createRun(s, { prompt: 'Long refactor WAIT 1.5', config: config('codex') });
    await waitForState(s, runId, ['INPROGRESS']);
    await whenRunsTold(s, 'the thread to start', async () =>
      (await eventsOf(s, runId)).some((e) => e.type === 'session'),
    );
    await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'Also fix the tests' });
    await whenRunsTold(s, 'the second execution to finish', async () => {
      const e = await executionsOf(s, runId);
      return e.length === 2 && e[1]!.ended_at !== null;
    });
    const [first, second] = await executionsOf(s, runId);
    expect(first!.outcome).toBe('succeeded');
    const rec = fakeRecords(second!.workspace!).at(-1);
    expect(rec.argv.slice(-3)).toEqual(['resume', first!.agent_session_id, '-']);
    expect(rec.prompt).toBe('Also fix the tests');
    expect(await consumers(runId)).toEqual({ 'Also fix the tests': second!.id });
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('SUCCEEDED');
    const states = (await eventsOf(s, runId)).filter((e) => e.type === 'state').map((e) => e.data.state);
    expect(states).toEqual(['CLAIMED', 'INPROGRESS', 'SUCCEEDED', 'QUEUED', 'CLAIMED', 'INPROGRESS', 'SUCCEEDED']);
  });

  it('continues a finished Gemini CLI run with --resume', async () => {
    const runId = await createRun(s, { prompt: 'Draft', config: config('gemini') });
    await waitForState(s, runId, ['SUCCEEDED']);
    await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'Polish it' });
    await whenRunsTold(s, 'the second execution to finish', async () => {
      const e = await executionsOf(s, runId);
      return e.length === 2 && e[1]!.ended_at !== null;
    });
    const [first, second] = await executionsOf(s, runId);
    const rec = fakeRecords(second!.workspace!).at(-1);
    expect(rec.resume).toBe(first!.agent_session_id);
    expect(rec.prompt.startsWith('Polish it')).toBe(true);
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('SUCCEEDED');
  });
});
