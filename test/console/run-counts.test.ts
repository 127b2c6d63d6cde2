/**
 * GET /run-counts: the team's runs counted by state in one grouped statement, and the console's overview,
 * which shows those counts uncapped (130 queued runs read "130", not "100+") and refreshes them live.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { get, signIn } from './support.ts';
import type { Session } from './support.ts';

const QUEUED = 130;

describe.each(['pglite', 'postgres'] as const)('run counts (%s)', (engine) => {
  let server: TestServer;
  let admin: Session;

  beforeAll(async () => {
    // No harness is configured: every run stays QUEUED.
    server = await startTestServer(engine);
    admin = await signIn(server, server.adminKey);
    for (let i = 0; i < QUEUED; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, QUEUED - i) }, (_, j) =>
          server.api('POST', '/agent/runs', { title: `queued ${i + j}`, prompt: 'wait' }).then((r) => {
            expect(r.status).toBe(200);
          }),
        ),
      );
    }
  }, 120_000);
  afterAll(async () => server?.close());

  it('counts every state, or the states asked, for the caller’s team only', async () => {
    const all = await server.api('GET', '/run-counts');
    expect(all.status).toBe(200);
    expect(all.body.counts.QUEUED).toBe(QUEUED);
    expect(all.body.counts.SUCCEEDED).toBe(0);
    expect(Object.keys(all.body.counts)).toHaveLength(9);
    expect(all.body.total).toBe(QUEUED);

    const some = await server.api('GET', '/run-counts?state=QUEUED&state=BLOCKED&state=QUEUED');
    expect(some.body).toEqual({ counts: { QUEUED, BLOCKED: 0 }, total: QUEUED });

    const bad = await server.api('GET', '/run-counts?state=RUNNING');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('state');

    const team = await server.api('POST', '/teams', { name: `counts-${engine}` });
    const otherKey = team.body.admin_key?.key ?? team.body.api_key?.key ?? team.body.key;
    const other = await server.api('GET', '/run-counts', undefined, otherKey);
    expect(other.body.total).toBe(0);
    expect((await fetch(`${server.apiUrl}/run-counts`)).status).toBe(401);
  });

  it('counts active states from the partial index of active runs, without reading the rows', async () => {
    const db = server.database.db;
    await db.exec('VACUUM ANALYZE runs');
    const plan = await db.transaction(async (tx) => {
      // On a table this small a sequential scan is as good: without it the planner must pick the index.
      await tx.query('SET LOCAL enable_seqscan = off');
      return tx.query<Record<string, string>>(
        `EXPLAIN SELECT state, count(*) AS n FROM runs
          WHERE team_id = 'x' AND state = ANY('{QUEUED,BLOCKED}'::text[])
            AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED')
          GROUP BY state`,
      );
    });
    const text = plan.rows.map((r) => Object.values(r)[0]).join('\n');
    expect(text).toMatch(/Index Only Scan using runs_team_active_state/);
  });

  it('shows the overview’s counts uncapped, live', async () => {
    const overview = await get(server, '/', admin.cookie);
    expect(overview.text).toMatch(/<a class="big" href="\/console\/runs\?state=QUEUED">130<\/a> queued/);
    expect(overview.text).not.toContain('100+');
    await server.api('POST', '/agent/runs', { title: 'one more', prompt: 'wait' });
    const live = await get(server, '/console/overview.html', admin.cookie);
    expect(live.text).toMatch(/<a class="big" href="\/console\/runs\?state=QUEUED">131<\/a> queued/);
  });
});
