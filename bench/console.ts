/**
 * Console benchmark (not a test): figures for docs/performance.md, section "Console".
 *
 *   node bench/console.ts [--rows 1000000] [--factories 200] [--rounds 4] [--requests 50] [--engines pglite,postgres]
 *
 * 1. Server time to render the runs page (`GET /console/runs`) and a webhook's page with its delivery log
 *    (`GET /console/webhooks/{uid}`) with `--rows` runs and deliveries in the team, against the JSON API's list of
 *    the same page (`GET /api/v1/agent/runs?limit=25`, `GET /api/v1/webhooks/{uid}/deliveries?limit=50`) in the
 *    same run: p50 / p99 and the ratio of p50s (target ≤ 1.5). Requests alternate between the two, round after
 *    round, so that the machine's drift hits both alike.
 * 2. Server time to render a run's page with `--events` events (2,000 by default: tool calls with multi-line
 *    output, messages in Markdown, usage, status) against the JSON list of the same events (the API's transcript:
 *    `GET /api/v1/agent/runs/{id}/transcript` and the download it redirects to), alternating the same way
 *    (target ≤ 1.5).
 * 3. First load of the overview with `--factories` factories in Debian's Chromium (playwright-core): the
 *    navigation's load event after a cold start of the browser context (median of five; target ≤ 300 ms),
 *    against a page with the same layout and no data loaded in turn (the baseline of the ratio printed).
 *
 * `--profile <dir>` writes the server's CPU profile there (node --cpu-prof), per engine, when it stops.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { generateApiKey } from '../src/identity/api-keys.ts';
import { bootstrapIdentity } from '../src/identity/service.ts';
import type { Db } from '../src/kernel/db.ts';
import { prepareDatabase } from '../src/schema.ts';
import { openDatabase } from '../src/store/open.ts';
import { openPostgres } from '../src/store/pg.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import type { PostgresServer } from '../test/support/postgres-server.ts';
import { bulkInsertRuns } from './support/bulk-runs.ts';
import { startAgentyard } from './support/processes.ts';
import { launchChromium } from '../test/support/chromium.ts';
import { fmt, percentile } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    factories: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '4' },
    requests: { type: 'string', default: '50' },
    engines: { type: 'string', default: 'pglite,postgres' },
    events: { type: 'string', default: '2000' },
    /** A directory for the server's CPU profile (node --cpu-prof), written when it stops. */
    profile: { type: 'string' },
  },
});
const ROWS = Number(values.rows);
const FACTORIES = Number(values.factories);
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const ENGINES = values.engines.split(',') as ('pglite' | 'postgres')[];
const EVENTS = Number(values.events);
/** The run whose page is timed: the first bulk run (SUCCEEDED), given an execution and `--events` events. */
const EVENTS_RUN = `run_bulk${'1'.padStart(18, '0')}`;

const tmpDirs: string[] = [];

async function seed(db: Db, key: string): Promise<{ teamId: string; creatorId: string; webhookUid: string }> {
  await prepareDatabase(db);
  await bootstrapIdentity(db, key);
  const row = (
    await db.query<{ team_id: string; principal_id: string }>(
      `SELECT team_id, principal_id FROM api_keys WHERE instance_admin ORDER BY created_at LIMIT 1`,
    )
  ).rows[0]!;
  const teamId = row.team_id;
  await db.query(
    `INSERT INTO factories (id, team_id, name, source, state, applied_revision, applied_at)
     SELECT 'fac_bench' || lpad(g::text, 6, '0'), $1, 'factory-' || g, '{"type":"managed"}'::jsonb,
       (ARRAY['applied','failed','pending'])[1 + g % 3], 'main@sha1:' || md5(g::text) || '00000000', ay_now()
     FROM generate_series(1, $2::int) g`,
    [teamId, FACTORIES],
  );
  const webhookUid = 'wh_bench';
  await db.query(
    `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, secret_name)
     VALUES ($1, $2, 'fac_bench000001', 'ci', 'webhooks/ci.yaml', 'token', 'ci')`,
    [webhookUid, teamId],
  );
  for (let start = 1; start <= ROWS; start += 50_000) {
    const end = Math.min(ROWS, start + 49_999);
    await db.query(
      `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, identity,
         identity_source, size, received_at, payload)
       SELECT 'dlv_bulk' || lpad(g::text, 18, '0'), $1, $2, 'fac_bench000001', 'ci',
         (ARRAY['accepted','rejected_auth','accepted','duplicate'])[1 + g % 4],
         CASE WHEN g % 4 IN (0, 2) THEN 'body_sha256:' || g END, 'body_sha256', 40,
         timestamptz '2025-01-01 00:00:00+00' + g * interval '1 second',
         CASE WHEN g % 4 IN (0, 2) THEN convert_to('{"build":' || g || '}', 'UTF8') END
       FROM generate_series($3::int, $4::int) g`,
      [webhookUid, teamId, start, end],
    );
  }
  await bulkInsertRuns(db, teamId, row.principal_id, 1, ROWS);
  // The visibility map a running database keeps (autovacuum, the maintenance loop under PGlite): index-only scans.
  await db.exec('VACUUM runs');
  await db.query(
    `INSERT INTO executions (id, run_id, team_id, attempt, executor, harness, lease_expires_at, started_at, ended_at)
     VALUES ('exe_bench', $1, $2, 1, 'service:bench', 'claude', ay_now(), ay_now(), ay_now())`,
    [EVENTS_RUN, teamId],
  );
  // What Claude Code reports, in turn: a tool call, its output (twelve lines), a message, usage, a status.
  await db.query(
    `INSERT INTO run_events (run_id, sequence, execution_id, type, data, occurred_at)
     SELECT $1, 1000 + g, 'exe_bench',
       (ARRAY['tool_call','tool_result','message','usage','status'])[1 + g % 5],
       CASE g % 5
         WHEN 0 THEN jsonb_build_object('id', 't' || g, 'name', 'Bash', 'category', 'command',
           'input', jsonb_build_object('command', 'grep -rn "needle ' || g || '" src/ | head -20'))
         WHEN 1 THEN jsonb_build_object('id', 't' || (g - 1), 'name', 'Bash', 'category', 'command',
           'status', 'completed', 'output', jsonb_build_object('content', jsonb_build_array(jsonb_build_object(
             'type', 'text', 'text', (SELECT string_agg('src/module' || i || '.ts:' || (g * i) || ': const needle = ' || g || ';', E'\n')
               FROM generate_series(1, 12) i)))))
         WHEN 2 THEN jsonb_build_object('role', 'assistant', 'text',
           'I looked at **module ' || g || '** and found \`needle\` in twelve places:' || E'\n\n' ||
           '- the parser' || E'\n' || '- the renderer' || E'\n\n' || 'Next I will change the tests.')
         WHEN 3 THEN jsonb_build_object('input_tokens', 1200 + g, 'output_tokens', 300, 'cached_input_tokens', 800)
         ELSE jsonb_build_object('message', 'step ' || g || ' of the plan')
       END,
       timestamptz '2025-01-01 00:00:00+00' + g * interval '1 second'
     FROM generate_series(1, $2::int) g`,
    [EVENTS_RUN, EVENTS],
  );
  await db.exec('ANALYZE webhook_deliveries');
  return { teamId, creatorId: row.principal_id, webhookUid };
}

async function timed(url: string, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, { headers, redirect: 'manual' });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return performance.now() - started;
}

async function signIn(url: string, key: string): Promise<string> {
  const res = await fetch(`${url}/console/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ api_key: key }).toString(),
    redirect: 'manual',
  });
  const cookie = res.headers.get('set-cookie');
  if (res.status !== 303 || !cookie) throw new Error(`sign-in answered ${res.status}`);
  return cookie.split(';')[0]!;
}

async function pageVersusApi(url: string, key: string, cookie: string, webhookUid: string): Promise<void> {
  const pairs = [
    { name: 'runs', page: '/console/runs', api: '/api/v1/agent/runs?limit=25' },
    {
      name: 'webhook deliveries',
      page: `/console/webhooks/${webhookUid}`,
      api: `/api/v1/webhooks/${webhookUid}/deliveries?limit=50`,
    },
  ];
  for (const pair of pairs) {
    const page: number[] = [];
    const api: number[] = [];
    await timed(url + pair.page, { cookie });
    await timed(url + pair.api, { authorization: `Bearer ${key}` });
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < REQUESTS; i++) {
        api.push(await timed(url + pair.api, { authorization: `Bearer ${key}` }));
        page.push(await timed(url + pair.page, { cookie }));
      }
    }
    page.sort((a, b) => a - b);
    api.sort((a, b) => a - b);
    console.log(
      `| ${pair.name} | ${fmt(percentile(api, 50), 2)} / ${fmt(percentile(api, 99), 2)} | ` +
        `${fmt(percentile(page, 50), 2)} / ${fmt(percentile(page, 99), 2)} | ${fmt(percentile(page, 50) / percentile(api, 50), 2)} |`,
    );
  }
}

/** CPU time (user and system, ms) the server's process has used so far: what the machine's load moves least. */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/**
 * The run's page against the JSON list of its events: the transcript's redirect and its download, in turn. Also
 * the server's CPU time per request of each (from /proc, summed over all requests: ticks of 10 ms).
 */
async function runPageVersusEvents(url: string, key: string, cookie: string, serverPid: number): Promise<void> {
  const auth = { authorization: `Bearer ${key}` };
  const events = async (): Promise<number> => {
    const started = performance.now();
    const redirect = await fetch(`${url}/api/v1/agent/runs/${EVENTS_RUN}/transcript`, {
      headers: auth,
      redirect: 'manual',
    });
    await redirect.arrayBuffer();
    const location = new URL(redirect.headers.get('location') ?? '', url);
    const res = await fetch(`${url}${location.pathname}`);
    const body = await res.text();
    if (res.status !== 200 || body.split('\n').length < EVENTS)
      throw new Error(`the transcript answered ${res.status}`);
    return performance.now() - started;
  };
  const pageUrl = `${url}/console/runs/${EVENTS_RUN}`;
  const page: number[] = [];
  const api: number[] = [];
  await events();
  await timed(pageUrl, { cookie });
  let [apiCpu, pageCpu] = [0, 0];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < Math.max(5, Math.round(REQUESTS / 5)); i++) {
      let before = processCpuMs(serverPid);
      api.push(await events());
      apiCpu += processCpuMs(serverPid) - before;
      before = processCpuMs(serverPid);
      page.push(await timed(pageUrl, { cookie }));
      pageCpu += processCpuMs(serverPid) - before;
    }
  }
  page.sort((a, b) => a - b);
  api.sort((a, b) => a - b);
  console.log(
    `| run page, ${fmt(EVENTS)} events | ${fmt(percentile(api, 50), 2)} / ${fmt(percentile(api, 99), 2)} | ` +
      `${fmt(percentile(page, 50), 2)} / ${fmt(percentile(page, 99), 2)} | ${fmt(percentile(page, 50) / percentile(api, 50), 2)} |`,
  );
  console.error(
    `[run page] server CPU per request: JSON events ${fmt(apiCpu / api.length, 1)} ms, page ${fmt(pageCpu / page.length, 1)} ms, ratio ${fmt(pageCpu / apiCpu, 2)}`,
  );
}

/**
 * First loads in Chromium, each in a fresh browser context: the overview and, in turn, a baseline page with the
 * same layout, stylesheet and script and no data (an unknown console address, its 404 page). Median of five each.
 */
async function firstLoads(url: string, cookie: string): Promise<{ overview: number[]; baseline: number[] }> {
  const browser = await launchChromium();
  const out = { overview: [] as number[], baseline: [] as number[] };
  try {
    const [name, value] = cookie.split('=') as [string, string];
    const load = async (path: string): Promise<number> => {
      const context = await browser.newContext();
      await context.addCookies([{ name, value, url }]);
      const page = await context.newPage();
      await page.goto(url + path, { waitUntil: 'load' });
      const ms = await page.evaluate(() => {
        const timing = performance as unknown as {
          getEntriesByType(type: string): { loadEventEnd: number; startTime: number }[];
        };
        const nav = timing.getEntriesByType('navigation')[0]!;
        return nav.loadEventEnd - nav.startTime;
      });
      await context.close();
      return ms;
    };
    await load('/');
    for (let i = 0; i < 5; i++) {
      out.baseline.push(await load('/console/baseline'));
      out.overview.push(await load('/'));
    }
  } finally {
    await browser.close();
  }
  out.overview.sort((a, b) => a - b);
  out.baseline.sort((a, b) => a - b);
  return out;
}

let pg: PostgresServer | undefined;
try {
  if (ENGINES.includes('postgres')) pg = await startPostgresServer();
  console.log(
    `# Console benchmark — ${new Date().toISOString()}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`,
  );
  console.log(
    `\n${fmt(ROWS)} runs and ${fmt(ROWS)} deliveries in the team; ${ROUNDS} rounds of ${REQUESTS} requests each, alternating.\n`,
  );
  for (const engine of ENGINES) {
    const key = generateApiKey();
    const dataDir = mkdtempSync(path.join(tmpdir(), `agentyard-bench-console-${engine}-`));
    tmpDirs.push(dataDir);
    let databaseUrl: string | undefined;
    let db: Db;
    if (engine === 'postgres') {
      const admin = await openPostgres({ connectionString: pg!.url, maxConnections: 1 });
      await admin.exec('CREATE DATABASE bench_console');
      await admin.close();
      databaseUrl = pg!.url.replace(/\/postgres$/, '/bench_console');
      db = await openPostgres({ connectionString: databaseUrl });
    } else {
      db = await openDatabase({ databaseUrl: undefined, dataDir });
    }
    const started = performance.now();
    const seeded = await seed(db, key);
    console.error(`[${engine}] seeded in ${fmt((performance.now() - started) / 1000, 1)} s`);
    await db.close();
    const server = await startAgentyard({
      dataDir,
      apiKey: key,
      ...(databaseUrl ? { databaseUrl } : {}),
      ...(values.profile
        ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile, engine)}`] }
        : {}),
    });
    try {
      const cookie = await signIn(server.url, key);
      console.log(
        `## ${engine}\n\n| Page | JSON API p50 / p99 ms | Console page p50 / p99 ms | p50 ratio (target ≤ 1.5) |\n|---|---:|---:|---:|`,
      );
      await pageVersusApi(server.url, key, cookie, seeded.webhookUid);
      await runPageVersusEvents(server.url, key, cookie, server.child.pid!);
      const loads = await firstLoads(server.url, cookie);
      const [overview, baseline] = [percentile(loads.overview, 50), percentile(loads.baseline, 50)];
      console.log(
        `\nOverview with ${FACTORIES} factories, first load in Chromium (load event): median ${fmt(overview)} ms, ` +
          `slowest ${fmt(loads.overview.at(-1)!)} ms (target ≤ 300 ms); a page with no data in the same browser ` +
          `${fmt(baseline)} ms: ratio ${fmt(overview / baseline, 2)}\n`,
      );
    } finally {
      await server.stop();
    }
  }
} finally {
  await pg?.stop();
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
}
