/**
 * Live events over server-sent events (a real HTTP stream): the history then live events with `id:` = the
 * per-run sequence, a resume with Last-Event-ID that neither loses nor repeats an event, replay after the
 * fact; the reference's poll endpoint; the transcript behind its 302.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { request } from '../support/server.ts';
import { createRun, eventsOf, startExecServer, waitForState } from './support.ts';
import type { ExecServer } from './support.ts';

interface SseEvent {
  id: number | undefined;
  event: string;
  data: any;
}

/** Reads an SSE stream; stops after `limit` events with an id, or at the `end` event. */
async function readSse(
  url: string,
  key: string,
  options: { lastEventId?: number; limit?: number } = {},
): Promise<{ events: SseEvent[]; status: number; contentType: string | null; ended: boolean }> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: {
      authorization: `Bearer ${key}`,
      accept: 'text/event-stream',
      ...(options.lastEventId !== undefined ? { 'last-event-id': String(options.lastEventId) } : {}),
    },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  if (res.status !== 200 || !res.body)
    return { events, status: res.status, contentType: res.headers.get('content-type'), ended: false };
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let ended = false;
  try {
    outer: for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let i: number;
      while ((i = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const fields: Record<string, string> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          if (colon < 0) continue;
          fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
        }
        if (!fields.event && !fields.data) continue;
        const e: SseEvent = {
          id: fields.id ? Number(fields.id) : undefined,
          event: fields.event ?? 'message',
          data: fields.data ? JSON.parse(fields.data) : null,
        };
        events.push(e);
        if (e.event === 'end') {
          ended = true;
          break outer;
        }
        if (options.limit !== undefined && events.filter((x) => x.id !== undefined).length >= options.limit)
          break outer;
      }
    }
  } finally {
    controller.abort();
  }
  return { events, status: res.status, contentType: res.headers.get('content-type'), ended };
}

describe.each(ENGINES)('run events on %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(engine);
    await s.api('PUT', '/secrets/key', { value: 'sk-events-0123456789' });
  });
  afterAll(async () => {
    await s?.close();
  });

  const config = { harness_auth_secrets: { claude_auth_secret_name: 'key' } };

  it('streams the history and the live events of a run, then ends', async () => {
    const runId = await createRun(s, { prompt: 'Stream me WAIT 1 LIST_FILES', config });
    const stream = await readSse(`${s.apiUrl}/agent/runs/${runId}/events`, s.adminKey);
    expect(stream.status).toBe(200);
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    expect(stream.ended).toBe(true);
    const withId = stream.events.filter((e) => e.id !== undefined);
    expect(withId.map((e) => e.id)).toEqual(withId.map((_, i) => i + 1));
    const stored = await eventsOf(s, runId);
    expect(withId.map((e) => [e.id, e.event])).toEqual(stored.map((e) => [e.sequence, e.type]));
    expect(withId[0]!.data).toMatchObject({
      run_id: runId,
      sequence: 1,
      type: 'state',
      data: { state: 'CLAIMED', previous: 'QUEUED' },
    });
    expect(stream.events.at(-1)).toMatchObject({
      event: 'end',
      data: { run_id: runId, state: 'SUCCEEDED', last_sequence: stored.length },
    });
  });

  it('resumes with Last-Event-ID without losing or repeating an event', async () => {
    const runId = await createRun(s, { prompt: 'Resume me WAIT 1.5 LIST_FILES', config });
    const first = await readSse(`${s.apiUrl}/agent/runs/${runId}/events`, s.adminKey, { limit: 2 });
    const seen = first.events.filter((e) => e.id !== undefined);
    expect(seen).toHaveLength(2);
    const rest = await readSse(`${s.apiUrl}/agent/runs/${runId}/events`, s.adminKey, { lastEventId: seen.at(-1)!.id! });
    expect(rest.ended).toBe(true);
    const all = [...seen, ...rest.events.filter((e) => e.id !== undefined)].map((e) => e.id);
    const stored = (await eventsOf(s, runId)).map((e) => e.sequence);
    expect(all).toEqual(stored);
    expect((await waitForState(s, runId, ['SUCCEEDED'])).state).toBe('SUCCEEDED');
  });

  it('replays a finished run (follow=false, since=), and refuses a malformed Last-Event-ID', async () => {
    const runId = await createRun(s, { prompt: 'Replay me', config });
    await waitForState(s, runId, ['SUCCEEDED']);
    const stored = await eventsOf(s, runId);
    const replay = await readSse(`${s.apiUrl}/agent/runs/${runId}/events?follow=false`, s.adminKey);
    expect(replay.events.filter((e) => e.id !== undefined).map((e) => e.id)).toEqual(stored.map((e) => e.sequence));
    const since = await readSse(`${s.apiUrl}/agent/runs/${runId}/events?since=3`, s.adminKey);
    expect(since.events.filter((e) => e.id !== undefined)[0]!.id).toBe(4);
    const bad = await readSse(`${s.apiUrl}/agent/runs/${runId}/events`, s.adminKey, { lastEventId: -1 });
    expect(bad.status).toBe(400);
    expect((await readSse(`${s.apiUrl}/agent/runs/run_missing/events`, s.adminKey)).status).toBe(404);

    // one event by its sequence, as the stream sends it
    const third = await s.api('GET', `/agent/runs/${runId}/events/3`);
    expect(third.status).toBe(200);
    expect(third.body).toEqual(replay.events.find((e) => e.id === 3)!.data);
    expect((await s.api('GET', `/agent/runs/${runId}/events/${stored.length + 1}`)).body).toMatchObject({
      status: 404,
      detail: `run ${runId} has no event ${stored.length + 1}`,
    });
    for (const bad of ['0', 'x', '1.5', '-1']) {
      const res = await s.api('GET', `/agent/runs/${runId}/events/${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.detail, bad).toMatch(/sequence/);
    }
    expect((await s.api('GET', '/agent/runs/run_missing/events/1')).status).toBe(404);
  });

  it('answers the reference poll endpoint (GET /agent/events) and the report endpoint', async () => {
    const runId = await createRun(s, { prompt: 'Poll me', config });
    await waitForState(s, runId, ['SUCCEEDED']);
    const polled = (await s.api('GET', `/agent/events?run_ids=${runId}&since=0&limit=500`)).body;
    expect(polled.map((e: { event_type: string }) => e.event_type).filter((t: string) => t.startsWith('run_'))).toEqual(
      ['run_claimed', 'run_in_progress', 'run_succeeded'],
    );
    expect(polled[0]).toMatchObject({
      run_id: runId,
      sequence: 1,
      execution_id: expect.stringMatching(/^exe_/),
      occurred_at: expect.any(String),
      ref_id: null,
    });
    const after = (await s.api('GET', `/agent/events?run_ids=${runId}&since=${polled.at(-2).sequence}`)).body;
    expect(after.map((e: { sequence: number }) => e.sequence)).toEqual([polled.at(-1).sequence]);
    const reported = await s.api('POST', `/agent/events/${runId}`, { event_type: 'run_blocked', ref_id: 'ref-1' });
    expect(reported.body.sequence).toBe(polled.at(-1).sequence + 1);
    // no execution named: recorded, the state stays
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('SUCCEEDED');
    expect((await s.api('POST', `/agent/events/${runId}`, { event_type: 'bogus' })).status).toBe(400);
  });

  it('redirects /transcript to a time-limited download of every event as JSON lines', async () => {
    const runId = await createRun(s, { prompt: 'Transcribe me LIST_FILES', config });
    await waitForState(s, runId, ['SUCCEEDED']);
    const res = await fetch(`${s.apiUrl}/agent/runs/${runId}/transcript`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    const location = res.headers.get('location')!;
    expect(location.startsWith(`${s.apiUrl}/agent/transcripts/`)).toBe(true);
    const download = await request(location);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = download.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      kind: 'run',
      run_id: runId,
      prompt: 'Transcribe me LIST_FILES',
      state: 'SUCCEEDED',
    });
    expect(lines.slice(1).map((l) => l.sequence)).toEqual((await eventsOf(s, runId)).map((e) => e.sequence));
    expect(lines.some((l) => l.type === 'tool_call')).toBe(true);
    // a run that never executed has no transcript
    const queued = await createRun(s, { prompt: 'never', config: { worker_host: 'nobody' } });
    expect((await s.api('GET', `/agent/runs/${queued}/transcript`)).status).toBe(404);
    await s.api('POST', `/agent/runs/${queued}/cancel`);
  });
});
