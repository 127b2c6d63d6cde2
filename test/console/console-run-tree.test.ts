/**
 * The console's part of the factory interface (docs/orchestration.md): the run page's tree of parent and
 * children with the reports, questions and replies of the whole tree in order (read with one request,
 * `GET /agent/runs/{id}/tree`), and the overview's runs waiting for an answer (BLOCKED) with their question.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import type { FactoryCaller } from '../../src/orchestration/service.ts';

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
    // reports through the tool's own code, from every level: the grandchild to the child, the child to the root (before the root is BLOCKED: a report
    // resumes its parent)
    const iface = s.server.services.factoryInterface;
    const as = (runId: string): FactoryCaller => ({
      kind: 'run',
      teamId,
      runId,
      executionId: 'exe_test',
      factoryId: null,
    });
    await iface.report(as(grandchild), 'Reviewed: two <nits>');
    await iface.report(as(child), 'Implemented, review passed');
    await iface.reply(as(root), 'On it');
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

    const rootPage = await page(s, `/console/runs/${root}`, cookie);
    const messages = rootPage.text.slice(
      rootPage.text.indexOf('id="tree-messages"'),
      rootPage.text.indexOf('id="events"'),
    );
    const order = ['Reviewed: two &lt;nits&gt;', 'Implemented, review passed', 'On it'].map((t) => messages.indexOf(t));
    expect(order.every((i) => i > 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    // the grandchild's report names who sent it and to whom, though neither is the page's run
    expect(messages).toMatch(new RegExp(`data-run="${grandchild}" data-type="report">.*href="/console/runs/${child}"`));
    // the same list on the grandchild's page
    const leaf = await page(s, `/console/runs/${grandchild}`, cookie);
    expect(leaf.text).toContain('Implemented, review passed');
    expect(leaf.text).toContain('Reviewed: two &lt;nits&gt;');

    // the API answer the page is made from: root first, each run's depth, the sender's copy of each report
    const treeDoc = (await s.api('GET', `/agent/runs/${grandchild}/tree`)).body;
    expect(treeDoc.root_run_id).toBe(root);
    expect(treeDoc.runs.map((r: { run_id: string; depth: number }) => [r.run_id, r.depth])).toEqual([
      [root, 0],
      [child, 1],
      [grandchild, 2],
    ]);
    expect(treeDoc.messages.map((m: { run_id: string; type: string }) => [m.run_id, m.type])).toEqual([
      [grandchild, 'report'],
      [child, 'report'],
      [root, 'reply'],
    ]);
    expect(treeDoc.messages[0].to_run_id).toBe(child);
    expect(treeDoc.truncated).toBe(false);
    expect((await s.api('GET', '/agent/runs/run_nope/tree')).status).toBe(404);
    // another team's run is unknown, and so is the tree above a run of ours whose parent id is another team's
    const teamB = (await s.api('POST', '/teams', { name: 'tree-other' })).body.team.id as string;
    const { run: foreign } = await runs.create({ teamId: teamB, prompt: 'b', source: 'API', creator: null });
    expect((await s.api('GET', `/agent/runs/${foreign.id}/tree`)).status).toBe(404);

    const alone = (await s.api('POST', '/agent/runs', { prompt: 'alone' })).body.run_id as string;
    expect((await page(s, `/console/runs/${alone}`, cookie)).text).not.toContain('id="tree"');

    const overview = await page(s, '/', cookie);
    const waiting = overview.text.slice(overview.text.indexOf('Waiting for an answer'));
    expect(waiting).toContain(`href="/console/runs/${root}"`);
    expect(waiting).toContain('<q>Shall I open the pull request?</q>');
  });
});
