/**
 * A run's console page tells what the agent did: each message once, tool calls with their output, artifacts by
 * type, usage and duration, the live transcript rendered as the page renders it, and a confirmed cancel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecServer, waitForState } from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { count, get, postForm, signIn } from './support.ts';
import type { Session } from './support.ts';
import { parseSse } from '../../src/console/sse.ts';

describe('the run page', { timeout: 60_000 }, () => {
  let server: ExecServer;
  let admin: Session;

  beforeAll(async () => {
    server = await startExecServer('pglite', { settings: { harnesses: ['command'], defaultHarness: 'command' } });
    admin = await signIn(server, server.adminKey);
  }, 60_000);
  afterAll(async () => server?.close());

  async function finishedRun(prompt: string): Promise<string> {
    const created = await server.api('POST', '/agent/runs', { prompt, config: { name: 'demo' } });
    expect(created.status).toBe(200);
    await waitForState(server, created.body.run_id, ['SUCCEEDED', 'FAILED']);
    return created.body.run_id;
  }

  it('shows every message once, tool output, artifacts by type, usage and duration', async () => {
    const id = await finishedRun('LIST_FILES ARTIFACTS_ALL please');
    const events = (await server.api('GET', `/agent/runs/${id}/events?follow=false`)).text as string;
    const messages = parseSse(events).filter((m) => m.event === 'message').length;
    expect(messages).toBe(1);

    const page = await get(server, `/console/runs/${id}`, admin.cookie);
    expect(page.status).toBe(200);
    // streamed, with the console's headers
    expect(page.headers.get('transfer-encoding')).toBe('chunked');
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.text).toMatch(/^<!doctype html>[\s\S]*<\/html>$/);
    expect(page.text).not.toMatch(/<!--[0-9a-f-]{36}-->/);
    expect(count(page.text, 'class="ev ev-message"')).toBe(messages);
    // the tool call with what it ran and what it printed
    expect(page.text).toMatch(/<pre class="call">ls -a<\/pre>/);
    expect(page.text).toMatch(/<pre class="out" aria-label="Output">\.agentyard<\/pre>/);
    expect(page.text).not.toContain('shell &quot;&quot;');
    // artifacts by type
    expect(page.text).toContain('<h3>Plan: The plan</h3>');
    expect(page.text).toMatch(/<div class="md"><h3>Plan<\/h3>\s*<ol><li>Fix it<\/li><\/ol><\/div>/);
    const download = /href="(\/console\/artifacts\/[^"]+\/download)"/.exec(page.text)![1]!;
    const view = /<img src="(\/console\/artifacts\/[^"]+\/view)"/.exec(page.text)![1]!;
    expect(page.text).toContain('<a href="https://example.com/pr/1" rel="noopener noreferrer">');
    // usage, duration and status from the run
    expect(page.text).toMatch(/id="run-usage">10 input, 5 output tokens/);
    expect(page.text).toMatch(/id="run-duration">\d+ s</);
    expect(page.text).toMatch(/id="run-status">[^<—]+</);
    expect(page.text).toContain('data-ended="true"');

    const file = await fetch(`${server.url}${download}`, { headers: { cookie: admin.cookie } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-disposition')).toMatch(/^attachment; filename="report.md"/);
    expect(await file.text()).toBe('# Report\n\nAll green.\n');
    const image = await fetch(`${server.url}${view}`, { headers: { cookie: admin.cookie } });
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('content-disposition')).toBe('inline');
    expect(image.headers.get('content-security-policy')).toContain('sandbox');
    // without a session the files are not served
    expect((await get(server, download)).status).toBe(303);
  });

  it('relays the live transcript rendered like the page, ending with the run', async () => {
    const id = await finishedRun('LIST_FILES done');
    const res = await fetch(`${server.url}/console/runs/${id}/live?since=0`, { headers: { cookie: admin.cookie } });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const messages = parseSse(await res.text());
    const items = messages.filter((m) => m.event === 'item').map((m) => JSON.parse(m.data));
    expect(messages.at(-1)!.event).toBe('end');
    expect(items.map((i) => i.seq)).toEqual(items.map((_, n) => n + 1));
    const result = items.find((i) => i.type === 'tool_result');
    expect(result.tool).toBe('t0');
    expect(result.result).toMatch(/<pre class="out" aria-label="Output">/);
    const state = items.filter((i) => i.type === 'state').at(-1);
    expect(state.facts.state).toBe('SUCCEEDED');
    expect(state.facts.state_html).toContain('SUCCEEDED');
    expect(state.facts.usage).toContain('10 input');
    const page = await get(server, `/console/runs/${id}`, admin.cookie);
    for (const item of items.filter((i) => i.type === 'message')) expect(page.text).toContain(item.html);
  });

  it('sends a long tool output only when asked: its event page and the fragment the page loads', async () => {
    const id = await finishedRun('LONG_OUTPUT please');
    const page = await get(server, `/console/runs/${id}`, admin.cookie);
    const collapsed =
      /<details class="out"><summary>Output \(30 lines\)<\/summary><a class="more" href="(\/console\/runs\/[^"]+\/events\/(\d+))">Show the output<\/a><\/details>/.exec(
        page.text,
      );
    expect(collapsed).not.toBeNull();
    const [, href, seq] = collapsed!;
    expect(href).toBe(`/console/runs/${id}/events/${seq}`);
    expect(page.text).not.toContain('line 30');
    expect(page.text).toContain('<pre class="call">seq 1 30</pre>');

    // the event's page: the output in full, escaped, with a way back
    const full = await get(server, href!, admin.cookie);
    expect(full.status).toBe(200);
    expect(full.text).toContain('<h1>Output of shell, event');
    expect(full.text).toMatch(
      /<pre class="out" aria-label="Output">line 1\n[^<]*&lt;b&gt;line 15&lt;\/b&gt;[^<]*line 30<\/pre>/,
    );
    expect(full.text).toContain(`href="/console/runs/${id}#transcript"`);
    // the fragment console.js puts in place of the link
    const body = await get(server, `${href}/body`, admin.cookie);
    expect(body.status).toBe(200);
    expect(body.headers.get('content-type')).toMatch(/^text\/html/);
    expect(body.text).toMatch(/^<pre class="out" aria-label="Output">line 1\n[\s\S]*line 30<\/pre>$/);
    expect(body.text).not.toContain('<b>');
    // the event as the API answers it
    const event = await server.api('GET', `/agent/runs/${id}/events/${seq}`);
    expect(event.body).toMatchObject({ run_id: id, sequence: Number(seq), type: 'tool_result' });

    // no session, no event, a malformed sequence
    expect((await get(server, href!)).status).toBe(303);
    expect((await get(server, `${href}/body`)).status).toBe(303);
    const missing = await get(server, `/console/runs/${id}/events/999999`, admin.cookie);
    expect(missing.status).toBe(404);
    expect(missing.text).toContain(`has no event 999999`);
    for (const bad of ['0', 'abc', '1e3', '99999999999999999999'])
      expect((await get(server, `/console/runs/${id}/events/${bad}/body`, admin.cookie)).status).toBe(404);
    expect((await get(server, `/console/runs/run_missing/events/1`, admin.cookie)).status).toBe(404);

    // the live relay collapses it the same way
    const res = await fetch(`${server.url}/console/runs/${id}/live?since=0`, { headers: { cookie: admin.cookie } });
    const items = parseSse(await res.text())
      .filter((m) => m.event === 'item')
      .map((m) => JSON.parse(m.data));
    const result = items.find((i) => i.type === 'tool_result' && i.result.includes('30 lines'));
    expect(result.result).toContain(`<a class="more" href="${href}">`);
  });

  it("shows a run's transcript to its own team's members only: another team's member gets a 404", async () => {
    const id = await finishedRun('LIST_FILES for team-only-marker');
    const member = await server.api('POST', '/api-keys', { name: 'run viewer', role: 'member' });
    expect(member.status).toBe(201);
    const own = await get(server, `/console/runs/${id}`, (await signIn(server, member.body.key)).cookie);
    expect(own.status).toBe(200);
    expect(own.text).toContain('team-only-marker');
    expect(own.text).toMatch(/<pre class="call">ls -a<\/pre>/);
    expect(own.text).toMatch(/<pre class="out" aria-label="Output">\.agentyard<\/pre>/);

    const team = await server.api('POST', '/teams', { name: 'run-page-elsewhere' });
    expect(team.status).toBe(201);
    const otherAdmin = team.body.admin_key?.key ?? team.body.api_key?.key ?? team.body.key;
    const otherMember = await server.api('POST', '/api-keys', { name: 'outsider', role: 'member' }, otherAdmin);
    expect(otherMember.status).toBe(201);
    const { cookie } = await signIn(server, otherMember.body.key);
    for (const path of [`/console/runs/${id}`, `/console/runs/${id}/events/1`, `/console/runs/${id}/events/1/body`]) {
      const res = await get(server, path, cookie);
      expect(res.status, path).toBe(404);
      expect(res.text).not.toContain('team-only-marker');
      expect(res.text).not.toContain('.agentyard');
    }
  });

  it('asks before cancelling, and answers the cancel with a redirect that a reload does not repeat', async () => {
    const created = await server.api('POST', '/agent/runs', { prompt: 'SLEEP 30', config: { name: 'long' } });
    const id = created.body.run_id;
    await waitForState(server, id, ['INPROGRESS']);
    const page = await get(server, `/console/runs/${id}`, admin.cookie);
    expect(page.text).toContain(`href="/console/runs/${id}/cancel"`);
    const confirm = await get(server, `/console/runs/${id}/cancel`, admin.cookie);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toMatch(/<h1>Cancel run [^<]*\?<\/h1>/);
    const done = await postForm(server, `/console/runs/${id}/cancel`, { csrf: admin.csrf }, admin.cookie);
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`/console/runs/${id}?done=cancel`);
    await waitForState(server, id, ['CANCELLED']);
    const again = await postForm(server, `/console/runs/${id}/cancel`, { csrf: admin.csrf }, admin.cookie);
    expect(again.headers.get('location')).toBe(`/console/runs/${id}?failed=cancel-finished`);
    const after = await get(server, `/console/runs/${id}?failed=cancel-finished`, admin.cookie);
    expect(after.text).toContain('already finished');
    expect(after.text).not.toContain('Cancel run…');
    // a forged notice code shows nothing
    expect((await get(server, `/console/runs/${id}?done=%3Cb%3E`, admin.cookie)).text).not.toContain('class="notice"');
  });
});
