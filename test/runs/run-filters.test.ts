import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

interface Listed {
  run_id: string;
  title: string;
  state: string;
  created_at: string;
  updated_at: string;
  agent_skill?: { full_path?: string };
}

describe.each(ENGINES)('GET /agent/runs filters, sorting and cursors on %s', (engine) => {
  let s: TestServer;
  const ids: Record<string, string> = {};
  const id = (name: string): string => ids[name]!;
  let teamId: string;

  const ids_of = (body: { runs: Listed[] }) => body.runs.map((r) => r.run_id);
  const list = async (query: string) => {
    const res = await s.api('GET', `/agent/runs${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body as { runs: Listed[]; page_info: { has_next_page: boolean; next_cursor?: string } };
  };

  beforeAll(async () => {
    s = await startTestServer(engine);
    teamId = (await s.api('GET', '/whoami')).body.team.id;
    const create = async (name: string, body: Record<string, unknown>) => {
      const res = await s.api('POST', '/agent/runs', body);
      expect(res.status, res.text).toBe(200);
      ids[name] = res.body.run_id;
    };
    await create('alpha', {
      prompt: 'Alpha task about parsers',
      config: { name: 'ci', model_id: 'm1', environment_id: 'env1' },
    });
    await create('beta', { prompt: 'Beta task', title: 'Zeta title', config: { name: 'nightly', model_id: 'm2' } });
    await create('gamma', { prompt: 'Gamma', skill: 'acme/tools:review', config: { model_id: 'm1' } });
    await create('delta', { prompt: 'Delta 100% done_ok', metadata: { ticket: 'T-1', team: 'core' } });
    // Runs other sources create (schedules, factories, automations) go through the same insert.
    const db = s.server.ctx.db;
    const { runs } = s.server.services;
    const { run: inserted } = await runs.create(
      {
        teamId,
        prompt: 'from a schedule',
        source: 'SCHEDULED_AGENT',
        creator: null,
        scheduleId: 'sch_1',
        factoryId: 'fac_1',
        automationId: 'auto_1',
        parentRunId: ids.alpha!,
      },
      { within: db },
    );
    ids.scheduled = inserted.id;
    const { run: child } = await runs.create(
      { teamId, prompt: 'grandchild', source: 'API', creator: null, parentRunId: inserted.id },
      { within: db },
    );
    ids.grandchild = child.id;
    await db.query(`UPDATE runs SET artifacts = $2 WHERE id = $1`, [
      id('beta'),
      JSON.stringify([
        {
          artifact_type: 'PULL_REQUEST',
          created_at: '2026-01-01T00:00:00.000Z',
          data: { url: 'https://x/pr/1', branch: 'b' },
        },
      ]),
    ]);
    // Spread the creation times so that the time filters have something to cut.
    const times = [
      '2026-01-01T00:00:00.000Z',
      '2026-01-02T00:00:00.000Z',
      '2026-01-03T00:00:00.000Z',
      '2026-01-04T00:00:00.000Z',
    ];
    for (const [i, name] of ['alpha', 'beta', 'gamma', 'delta'].entries()) {
      await db.query('UPDATE runs SET created_at = $2, updated_at = $2 WHERE id = $1', [id(name), times[i]!]);
    }
    await s.api('POST', `/agent/runs/${ids.beta}/cancel`);
  });
  afterAll(async () => {
    await s?.close();
  });

  it.each([
    ['state (repeated)', '?state=CANCELLED&state=SUCCEEDED', ['beta']],
    ['name', '?name=ci', ['alpha']],
    ['config_name (legacy)', '?config_name=nightly', ['beta']],
    ['model_id', '?model_id=m1', ['alpha', 'gamma']],
    ['source', '?source=SCHEDULED_AGENT', ['scheduled']],
    ['environment_id', '?environment_id=env1', ['alpha']],
    ['skill', '?skill=acme/tools:review', ['gamma']],
    ['skill_spec', '?skill_spec=acme/tools:review', ['gamma']],
    ['schedule_id', '?schedule_id=sch_1', ['scheduled']],
    ['factory_uid', '?factory_uid=fac_1', ['scheduled']],
    ['automation_id', '?automation_id=auto_1', ['scheduled']],
    ['ancestor_run_id (transitive)', '', ['scheduled', 'grandchild']],
    ['artifact_type', '?artifact_type=PULL_REQUEST', ['beta']],
    ['q over title', '?q=zeta', ['beta']],
    ['q over prompt', '?q=PARSERS', ['alpha']],
    ['q over skill', '?q=tools:rev', ['gamma']],
    ['q escapes LIKE wildcards', '?q=100%25%20done_ok', ['delta']],
    ['q with a bare % matches literally', '?q=%25', ['delta']],
    ['metadata (deep object)', '?metadata%5Bticket%5D=T-1&metadata[team]=core', ['delta']],
    [
      'created_after (Z)',
      '?created_after=2026-01-02T12:00:00Z&created_before=2026-01-05T00:00:00Z',
      ['gamma', 'delta'],
    ],
    ['created_before (offset)', '?created_before=2026-01-02T01:00:00%2B00:00', ['alpha', 'beta']],
    ['created_after (naive, Python)', '?created_after=2026-01-03T00:00:00.5&created_before=2026-01-05', ['delta']],
    ['execution_location', '?execution_location=LOCAL', []],
  ])('filters by %s', async (_name, query, expected) => {
    const q = query || `?ancestor_run_id=${ids.alpha}`;
    const body = await list(`${q}${q.includes('?') ? '&' : '?'}limit=100`);
    expect(new Set(ids_of(body))).toEqual(new Set(expected.map((n) => ids[n])));
  });

  it('filters by creator and executor (the caller by default)', async () => {
    const me = (await s.api('GET', '/whoami')).body.principal.uid;
    const byCreator = await list(`?creator=${me}&limit=100`);
    expect(new Set(ids_of(byCreator))).toEqual(new Set(['alpha', 'beta', 'gamma', 'delta'].map((n) => ids[n])));
    const byExecutor = await list(`?executor=${me}&limit=100`);
    expect(new Set(ids_of(byExecutor))).toEqual(new Set(ids_of(byCreator)));
  });

  it('filters by updated_after', async () => {
    const body = await list('?updated_after=2026-01-03T12:00:00.000Z&limit=100');
    // delta (Jan 4), the cancelled beta (updated now) and the two inserted runs (now).
    expect(new Set(ids_of(body))).toEqual(new Set(['beta', 'delta', 'scheduled', 'grandchild'].map((n) => ids[n])));
  });

  it('sorts by updated_at desc by default, and by created_at, title and agent in both orders', async () => {
    const all = (await list('?limit=100')).runs;
    const updated = all.map((r) => r.updated_at);
    expect(updated).toEqual([...updated].sort().reverse());
    const createdAsc = (await list('?limit=100&sort_by=created_at&sort_order=asc')).runs.map((r) => r.created_at);
    expect(createdAsc).toEqual([...createdAsc].sort());
    const titles = (await list('?limit=100&sort_by=title&sort_order=asc')).runs.map((r) => r.title);
    expect(titles).toEqual([...titles].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    for (const order of ['asc', 'desc']) {
      const runs = (await list(`?limit=100&sort_by=agent&sort_order=${order}`)).runs;
      // Runs without a skill come last in either direction.
      expect(runs[0]!.run_id).toBe(ids.gamma);
      expect(runs.slice(1).every((r) => r.agent_skill === undefined)).toBe(true);
    }
  });

  it('pages with a cursor until has_next_page is false, and omits next_cursor on the last page', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const body = await list(
        `?limit=2&model_id=m1&state=QUEUED${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      seen.push(...ids_of(body));
      cursor = body.page_info.next_cursor;
      expect(body.page_info.has_next_page).toBe(cursor !== undefined);
      pages++;
    } while (cursor);
    expect(new Set(seen)).toEqual(new Set([ids.alpha, ids.gamma]));
    expect(pages).toBe(1);
    const all: string[] = [];
    cursor = undefined;
    do {
      const body = await list(`?limit=1&sort_by=title&sort_order=asc${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...ids_of(body));
      cursor = body.page_info.next_cursor;
    } while (cursor);
    expect(all).toHaveLength(6);
    expect(new Set(all).size).toBe(6);
  });

  it('refuses a cursor of another sort, a forged cursor, and limits outside 1-500, naming the parameter', async () => {
    const first = await list('?limit=1');
    const mismatched = await s.api('GET', `/agent/runs?limit=1&sort_by=title&cursor=${first.page_info.next_cursor}`);
    expect(mismatched.status).toBe(400);
    expect(mismatched.body.detail).toMatch(/cursor/);
    for (const cursor of ['garbage!', Buffer.from('{"s":"updated_at","o":"desc","v":["x"]}').toString('base64url')]) {
      const res = await s.api('GET', `/agent/runs?cursor=${cursor}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_request' });
    }
    for (const limit of ['0', '501', 'abc']) {
      const res = await s.api('GET', `/agent/runs?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/limit/);
    }
    expect((await list('?limit=500')).runs.length).toBe(6);
    expect((await list('')).runs.length).toBe(6);
  });

  it('refuses unknown enum values and bad timestamps, naming the parameter, and ignores unknown parameters', async () => {
    const badState = await s.api('GET', '/agent/runs?state=RUNNING');
    expect(badState.status).toBe(400);
    expect(badState.body.detail).toMatch(/state/);
    const badSort = await s.api('GET', '/agent/runs?sort_by=colour');
    expect(badSort.status).toBe(400);
    expect(badSort.body.detail).toMatch(/sort_by/);
    const badTime = await s.api('GET', '/agent/runs?created_after=yesterday');
    expect(badTime.status).toBe(400);
    expect(badTime.body.detail).toMatch(/created_after/);
    expect((await s.api('GET', '/agent/runs?some_future_filter=1')).status).toBe(200);
  });

  it('answers the legacy /agent/tasks list with the same filters under "tasks"', async () => {
    const res = await s.api('GET', '/agent/tasks?config_name=ci');
    expect(res.status).toBe(200);
    expect(res.body.tasks.map((r: Listed) => r.run_id)).toEqual([ids.alpha]);
    expect((await s.api('GET', `/agent/tasks/${ids.alpha}`)).body.run_id).toBe(ids.alpha);
  });
});
