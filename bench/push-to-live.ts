/**
 * Push-to-live latency: from `git push` (to a local bare repository) to the new webhook's row being live
 * and to the webhook answering 202 at the ingress.
 *
 *   node bench/push-to-live.ts [PUSHES] [--postgres URL]
 *
 * Two modes, PUSHES pushes each (default 20):
 * - `sync`: push, then `POST /api/v1/factories/{id}/sync` (what a CI step or a push webhook relay calls; it
 *   answers once the revision is applied);
 * - `hook`: push, then a signed GitHub-style push notification to `/api/v1/factories/{id}/sync/push` (it
 *   answers 202 at once; the apply follows).
 * Prints p50 / p90 / max of: the push itself, push → row live, push → first 202 from the ingress.
 * Embedded PGlite in a temporary data directory unless --postgres is given.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { simpleGit } from 'simple-git';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { startServer } from '../src/server.ts';
import { generateApiKey } from '../src/identity/api-keys.ts';
import { percentile } from './support/stats.ts';

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: { postgres: { type: 'string' } },
});
const pushes = Number(positionals[0] ?? 20);
const root = mkdtempSync(path.join(tmpdir(), 'agentyard-bench-push-'));
const bare = path.join(root, 'remote.git');
const work = path.join(root, 'work');
const adminKey = generateApiKey();

const FACTORY = `schemaVersion: v1alpha1
name: Push bench
repositories:
  - {owner: acme, name: api}
agentDefaults:
  model: auto
  runner: default
`;
const FOREMAN = '---\nagentType: FOREMAN\n---\n\nYou are the foreman.\n';
const RUNNER = 'platform:\n  linux:\n    dockerImage: node:24\n';
const TOKEN = 'bench-token-0123456789';
const PUSH_SECRET = 'bench-push-secret';

async function write(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(path.join(work, file)), { recursive: true });
  await writeFile(path.join(work, file), content);
}

function report(label: string, samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(26)} p50 ${percentile(s, 50).toFixed(0).padStart(5)} ms   p90 ${percentile(s, 90).toFixed(0).padStart(5)} ms   max ${s.at(-1)!.toFixed(0).padStart(5)} ms`;
}

const config = loadConfig(
  {},
  {
    port: 0,
    host: '127.0.0.1',
    dataDir: path.join(root, 'data'),
    databaseUrl: values.postgres,
    bootstrapApiKey: adminKey,
    logLevel: 'silent',
    masterKey: 'b'.repeat(64),
  },
);
const server = await startServer(config, { log: createLogger('silent') });
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

try {
  await mkdir(bare);
  await simpleGit(bare).raw(['init', '--bare', '--quiet', '--initial-branch=main']);
  await mkdir(work);
  const git = simpleGit(work);
  await git.raw(['init', '--quiet', '--initial-branch=main']);
  await git.addConfig('user.name', 'Bench');
  await git.addConfig('user.email', 'bench@example.com');
  await git.addRemote('origin', bare);
  await write('factory.yaml', FACTORY);
  await write('agents/foreman/agent.md', FOREMAN);
  await write('runners/default.yaml', RUNNER);
  await git.raw(['add', '-A']);
  await git.raw(['commit', '--quiet', '-m', 'initial']);
  await git.raw(['push', '--quiet', 'origin', 'HEAD:refs/heads/main']);

  await api('PUT', '/secrets/bench-token', { value: TOKEN });
  await api('PUT', '/secrets/bench-push', { value: PUSH_SECRET });
  const created = await api('POST', '/factories', {
    name: 'bench',
    source: { type: 'git', url: bare, poll_interval_seconds: 0, push_secret: 'bench-push' },
  });
  const id = created.body.id as string;
  for (let i = 0; i < 200 && (await api('GET', `/factories/${id}`)).body.status.state !== 'applied'; i++)
    await new Promise((r) => setTimeout(r, 50));

  const ingressProbe = await fetch(`${server.url}/webhooks/w/wh_00000000000000000000000000`, {
    method: 'POST',
    body: '{}',
  });
  const hasIngress =
    ingressProbe.status !== 404 ||
    ((await ingressProbe.json().catch(() => ({}))) as { code?: string }).code === 'webhook_not_found';

  // Webhooks per factory are capped at 20: each push replaces the previous bench webhook with a new file.
  let n = 0;
  const run = async (mode: 'sync' | 'hook') => {
    const pushMs: number[] = [];
    const liveMs: number[] = [];
    const acceptedMs: number[] = [];
    for (let i = 0; i < pushes; i++) {
      const name = `hook-${++n}`;
      await git.raw(['rm', '--quiet', '-r', '--ignore-unmatch', 'webhooks']);
      await write(`webhooks/${name}.yaml`, 'authMode: token\nsecretName: bench-token\n');
      await git.raw(['add', '-A']);
      await git.raw(['commit', '--quiet', '-m', `add ${name}`]);
      const t0 = performance.now();
      await git.raw(['push', '--quiet', 'origin', 'HEAD:refs/heads/main']);
      pushMs.push(performance.now() - t0);
      if (mode === 'sync') {
        const res = await api('POST', `/factories/${id}/sync`);
        if (res.body.result !== 'applied') throw new Error(`sync: ${JSON.stringify(res.body)}`);
      } else {
        const body = JSON.stringify({ ref: 'refs/heads/main' });
        const signature = `sha256=${createHmac('sha256', PUSH_SECRET).update(body).digest('hex')}`;
        const res = await fetch(`${server.url}/api/v1/factories/${id}/sync/push`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature },
          body,
        });
        if (res.status !== 202) throw new Error(`push hook answered ${res.status}`);
      }
      let uid: string | undefined;
      while (!uid) {
        const hooks = (await api('GET', `/factories/${id}/webhooks`)).body.webhooks as { uid: string; name: string }[];
        uid = hooks.find((h) => h.name === name)?.uid;
        if (!uid) await new Promise((r) => setTimeout(r, 5));
      }
      liveMs.push(performance.now() - t0);
      if (hasIngress) {
        for (;;) {
          const res = await fetch(`${server.url}/webhooks/w/${uid}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ push: i }),
          });
          await res.arrayBuffer();
          if (res.status === 202) break;
          await new Promise((r) => setTimeout(r, 5));
        }
        acceptedMs.push(performance.now() - t0);
      }
    }
    console.log(
      `\n${mode === 'sync' ? 'push + POST /sync' : 'push + push notification (hook)'} — ${pushes} pushes, ${server.ctx.db.engine}`,
    );
    console.log(report('git push', pushMs));
    console.log(report('push → webhook row live', liveMs));
    if (acceptedMs.length) console.log(report('push → ingress 202', acceptedMs));
    else console.log('push → ingress 202          (no ingress route in this build)');
  };
  await run('sync');
  await run('hook');
} finally {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
}
