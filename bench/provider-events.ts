/**
 * Provider events against custom webhook deliveries, and routing cost against the number of factories.
 *
 *   node bench/provider-events.ts [SAMPLES] [--engines pglite,postgres] [--rounds 7] [--events 300]
 *
 * For each engine (PGlite in a temporary data directory; PostgreSQL on a server started for the run):
 * 1. Event → run created: SAMPLES signed GitHub `issues.labeled` events to the team's connection and SAMPLES
 *    token-authenticated deliveries to a custom webhook, alternated A B, B A; each timed from the POST to its run's row.
 *    Prints p50/p99 of both and their ratio (target ≤ 1.2).
 * 2. Routing: the subscription look-up and matching of one GitHub event for a team with 10 factories × 10
 *    automations and for a team with 1,000 × 10 (rows written straight into the tables an apply writes), in
 *    the same database: a warm-up, then ROUNDS alternating rounds of EVENTS events per team. Prints the median
 *    of the rounds' events/s for both, the range, and the ratio of the medians (target: within 1.5×).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sign } from '@octokit/webhooks-methods';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import type { PostgresServer } from '../test/support/postgres-server.ts';
import { openPostgres } from '../src/store/pg.ts';
import { providerSubscriptions } from '../src/automations/sql.ts';
import { githubEvents } from '../src/definitions/provider-events.ts';
import { matchesFilter } from '../src/definitions/trigger-match.ts';
import { loadConfig } from '../src/config.ts';
import { generateApiKey } from '../src/identity/api-keys.ts';
import { newId } from '../src/kernel/ids.ts';
import { createLogger } from '../src/log.ts';
import { startServer } from '../src/server.ts';

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: {
    engines: { type: 'string', default: 'pglite,postgres' },
    rounds: { type: 'string', default: '7' },
    events: { type: 'string', default: '300' },
  },
});
const samples = Number(positionals[0] ?? 100);
const ENGINES = values.engines.split(',') as ('pglite' | 'postgres')[];
const ROUNDS = Number(values.rounds);
const EVENTS = Number(values.events);
const TOKEN = 'bench-token-0123456789';
const GH_SECRET = 'bench-github-secret';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

let pg: PostgresServer | undefined;
try {
  if (ENGINES.includes('postgres')) pg = await startPostgresServer();
  console.log(
    `# Provider events — ${new Date().toISOString()}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`,
  );
  for (const engine of ENGINES) {
    let databaseUrl: string | undefined;
    if (engine === 'postgres') {
      const admin = await openPostgres({ connectionString: pg!.url, maxConnections: 1 });
      await admin.exec('CREATE DATABASE bench_provider');
      await admin.close();
      databaseUrl = pg!.url.replace(/\/postgres$/, '/bench_provider');
    }
    await benchEngine(databaseUrl);
  }
} finally {
  await pg?.stop();
}

async function benchEngine(databaseUrl: string | undefined): Promise<void> {
  const root = mkdtempSync(path.join(tmpdir(), 'agentyard-bench-provider-'));
  const adminKey = generateApiKey();

  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: path.join(root, 'data'),
      databaseUrl,
      bootstrapApiKey: adminKey,
      logLevel: 'silent',
      masterKey: 'b'.repeat(64),
    },
  );
  // The sender rate limit (60 per minute) is not what is measured here.
  const server = await startServer(config, {
    log: createLogger('silent'),
    compose: { ingress: { limits: { senderPoints: 1_000_000 } } },
  });
  const db = server.ctx.db;
  const api = async (method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${server.url}/api/v1${p}`, {
      method,
      headers: {
        authorization: `Bearer ${adminKey}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  async function runCreated(response: Response): Promise<void> {
    if (response.status !== 202) throw new Error(`expected 202, got ${response.status}: ${await response.text()}`);
    const deliveryId = ((await response.json()) as { delivery_id: string }).delivery_id;
    for (;;) {
      const res = await db.query('SELECT 1 FROM runs WHERE delivery_id = $1', [deliveryId]);
      if (res.rows.length > 0) return;
      await new Promise((r) => setImmediate(r));
    }
  }

  const files = (uid?: string) => ({
    'factory.yaml':
      'schemaVersion: v1alpha1\nname: Bench\nrepositories:\n  - {owner: acme, name: api}\nagentDefaults:\n  model: auto\n  runner: default\n',
    'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\n\nYou are the foreman.\n',
    'runners/default.yaml': 'platform:\n  linux:\n    dockerImage: node:24\n',
    'webhooks/alerts.yaml': 'authMode: token\nsecretName: bench-token\n',
    'automations/labeled/automation.md':
      '---\ntriggers:\n  - provider: github\n    event: issue_labeled\n    filter:\n      labels: [bench]\n---\n\nTriage.\n',
    ...(uid
      ? {
          'automations/alert/automation.md': `---\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${uid}]\n---\n\nInvestigate.\n`,
        }
      : {}),
  });

  try {
    await api('PUT', '/secrets/bench-token', { value: TOKEN });
    await api('PUT', '/secrets/bench-github', { value: GH_SECRET });
    const connection = (
      await api('PUT', '/integrations/github', { mode: 'webhook', webhook_secret_name: 'bench-github' })
    ).body;
    const factory = (await api('POST', '/factories', { name: 'bench', source: { type: 'managed' } })).body;
    const asList = (f: Record<string, string>) => Object.entries(f).map(([p, content]) => ({ path: p, content }));
    await api('POST', `/factories/${factory.id}/apply`, { files: asList(files()), message: 'webhook' });
    const [hook] = (await api('GET', `/factories/${factory.id}/webhooks`)).body.webhooks;
    await api('POST', `/factories/${factory.id}/apply`, { files: asList(files(hook.uid)), message: 'automations' });

    const provider: number[] = [];
    const webhook: number[] = [];
    for (let i = 0; i < samples + 10; i++) {
      const event = JSON.stringify({
        action: 'labeled',
        issue: { number: i, title: `Issue ${i}`, labels: [{ name: 'bench' }], assignees: [], user: { login: 'ada' } },
        label: { name: 'bench' },
        repository: { full_name: 'acme/api', owner: { login: 'acme' } },
        sender: { login: 'ada' },
      });
      const signature = await sign(GH_SECRET, event);
      const sendEvent = async () => {
        const at = performance.now();
        const res = await fetch(connection.events_url, {
          method: 'POST',
          body: event,
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'issues',
            'x-github-delivery': `bench-${i}`,
            'x-hub-signature-256': signature,
          },
        });
        await runCreated(res);
        if (i >= 10) provider.push(performance.now() - at);
      };
      const sendDelivery = async () => {
        const at = performance.now();
        const res = await fetch(hook.ingress_url, {
          method: 'POST',
          body: JSON.stringify({ n: i }),
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${TOKEN}`,
            'x-agentyard-delivery-id': `w-${i}`,
          },
        });
        await runCreated(res);
        if (i >= 10) webhook.push(performance.now() - at);
      };
      // A B, B A, …: neither kind always follows the other's run creation
      if (i % 2 === 0) {
        await sendEvent();
        await sendDelivery();
      } else {
        await sendDelivery();
        await sendEvent();
      }
    }
    provider.sort((a, b) => a - b);
    webhook.sort((a, b) => a - b);
    const fmt = (n: number) => `${n.toFixed(1)} ms`;
    console.log(`\n## ${db.engine}\n\n${samples} samples each (after 10 warm-up)`);
    console.log(
      `event → run created     provider p50 ${fmt(percentile(provider, 50))}  p99 ${fmt(percentile(provider, 99))}`,
    );
    console.log(
      `                        webhook  p50 ${fmt(percentile(webhook, 50))}  p99 ${fmt(percentile(webhook, 99))}`,
    );
    console.log(
      `ratio provider/webhook  p50 ${(percentile(provider, 50) / percentile(webhook, 50)).toFixed(2)}  p99 ${(percentile(provider, 99) / percentile(webhook, 99)).toFixed(2)}  (target ≤ 1.2)`,
    );

    // Routing: two teams in the same database, one with 10 factories and one with 1,000, 10 automations each,
    // every factory on a repository of its own.
    const teamOf = async (name: string) => {
      const id = newId('team');
      await db.query('INSERT INTO teams (id, name) VALUES ($1, $2)', [id, name]);
      return id;
    };
    const seed = async (teamId: string, count: number) => {
      for (let f = 0; f < count; f++) {
        const factoryId = newId('fac');
        await db.query(
          `INSERT INTO factories (id, team_id, name, source, state, definition) VALUES ($1, $2, $3, '{"type":"managed"}', 'applied', '{}'::jsonb)`,
          [factoryId, teamId, `routing-${f}`],
        );
        for (let a = 0; a < 10; a++) {
          const automationId = newId('auto');
          await db.query(
            `INSERT INTO automations (id, team_id, factory_id, name, file, prompt) VALUES ($1, $2, $3, $4, $5, 'Go.')`,
            [automationId, teamId, factoryId, `a${a}`, `automations/a${a}/automation.md`],
          );
          await db.query(
            `INSERT INTO automation_provider_triggers (automation_id, team_id, factory_id, provider, event, trigger_index, repository, filter)
           VALUES ($1, $2, $3, 'github', 'issue_labeled', 0, $4, $5)`,
            [automationId, teamId, factoryId, `acme/repo-${f}`, JSON.stringify({ labels: { in: [`label-${a}`] } })],
          );
        }
      }
    };
    const payload = {
      action: 'labeled',
      issue: { labels: [], assignees: [], user: { login: 'ada' } },
      label: { name: 'label-3' },
      repository: { full_name: 'acme/repo-5' },
    };
    const route = async (teamId: string, events: number): Promise<number> => {
      const started = performance.now();
      for (let i = 0; i < events; i++) {
        const derived = githubEvents('issues', payload);
        const subs = await providerSubscriptions(db, {
          teamId,
          provider: 'github',
          repository: derived.repository!,
          events: derived.events.map((e) => e.event),
        });
        if (subs.filter((s) => matchesFilter(s.filter, derived.events[0]!.facts)).length !== 1)
          throw new Error('routing found the wrong automations');
      }
      return events / ((performance.now() - started) / 1000);
    };
    const smallTeam = await teamOf('routing-10');
    const largeTeam = await teamOf('routing-1000');
    await seed(smallTeam, 10);
    await seed(largeTeam, 1_000);
    // As autovacuum (PostgreSQL) or the table maintenance (PGlite) would after a burst of applies.
    await db.query('ANALYZE automation_provider_triggers, automations, factories');
    await route(smallTeam, EVENTS);
    await route(largeTeam, EVENTS);
    const small: number[] = [];
    const large: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating which goes first, so that neither always follows the other.
      if (r % 2 === 0) {
        small.push(await route(smallTeam, EVENTS));
        large.push(await route(largeTeam, EVENTS));
      } else {
        large.push(await route(largeTeam, EVENTS));
        small.push(await route(smallTeam, EVENTS));
      }
    }
    const range = (v: number[]) => `${Math.min(...v).toFixed(0)}–${Math.max(...v).toFixed(0)}`;
    console.log(`\nrouting, median of ${ROUNDS} alternating rounds of ${EVENTS} events (range)`);
    console.log(`routing 10 factories × 10 automations     ${median(small).toFixed(0)} events/s (${range(small)})`);
    console.log(`routing 1,000 factories × 10 automations  ${median(large).toFixed(0)} events/s (${range(large)})`);
    console.log(`ratio 10/1,000  ${(median(small) / median(large)).toFixed(2)}  (target within 1.5)`);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}
