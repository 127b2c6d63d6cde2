/**
 * The console's part of the factory interface (docs/orchestration.md): the run page's tree of parent and
 * children, and the overview's runs waiting for an answer (BLOCKED) with their question.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

async function page(server: TestServer, path: string, cookie: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  return { status: res.status, text: await res.text() };
}

describe.each(ENGINES)('the console on a run tree on %s', (engine) => {
  let s: TestServer;
  let cookie: string;
  beforeAll(async () => {
    s = await startTestServer(engine);
    const res = await fetch(`${s.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ api_key: s.adminKey }).toString(),
      redirect: 'manual',
    });
    cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('shows the tree on each run of it, and the BLOCKED runs with their question on the overview', async () => {
    const teamId = (await s.api('GET', '/whoami')).body.team.id as string;
    const runs = s.server.services.runs;
    const make = async (title: string, name: string, parentRunId?: string) =>
      (
        await runs.create({
          teamId,
          prompt: title,
          title,
          config: { name },
          source: parentRunId ? 'ORCHESTRATION' : 'API',
          creator: null,
          parentRunId: parentRunId ?? null,
        })
      ).run.id;
    const root = await make('Handle the request', 'foreman');
    const child = await make('Implement the fix', 'implement', root);
    const grandchild = await make('Review the <fix>', 'review', child);
    await s.server.ctx.db.query(`UPDATE runs SET state = 'BLOCKED', status_message = $2 WHERE id = $1`, [
      root,
      JSON.stringify({ message: 'Shall I open the pull request?' }),
    ]);

    const childPage = await page(s, `/console/runs/${child}`, cookie);
    expect(childPage.status).toBe(200);
    const tree = childPage.text.slice(childPage.text.indexOf('id="tree"'), childPage.text.indexOf('id="events"'));
    expect(tree).toContain(`href="/console/runs/${root}"`);
    expect(tree).toContain('<strong>Implement the fix</strong>');
    expect(tree).toContain(`href="/console/runs/${grandchild}"`);
    expect(tree).toContain('Review the &lt;fix&gt;');
    expect(tree).toContain('Asks: Shall I open the pull request?');
    // nested: the grandchild sits inside the child's item, inside the root's
    expect(tree.indexOf(root)).toBeLessThan(tree.indexOf('Implement the fix'));
    expect(tree.indexOf('Implement the fix')).toBeLessThan(tree.indexOf(grandchild));

    const alone = (await s.api('POST', '/agent/runs', { prompt: 'alone' })).body.run_id as string;
    expect((await page(s, `/console/runs/${alone}`, cookie)).text).not.toContain('id="tree"');

    const overview = await page(s, '/', cookie);
    const waiting = overview.text.slice(overview.text.indexOf('Waiting for an answer'));
    expect(waiting).toContain(`href="/console/runs/${root}"`);
    expect(waiting).toContain('<q>Shall I open the pull request?</q>');
  });
});
