/**
 * The agent sandbox on real processes: agents started through the Run API under bubblewrap (Debian's
 * /usr/bin/bwrap) report what they can read, list, write and see, and the assertions read what they wrote.
 * Then the same server without bubblewrap (its path pointed at nothing): runs go on, saying they ran
 * unsandboxed, or are refused when a sandbox is required; and a container runtime whose engine is
 * unreachable refuses the run with the runtime's own diagnostic.
 */
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { factoryRunSettings } from '../../src/execution/sql.ts';
import { sandboxSettings } from '../../src/execution/sandbox/index.ts';
import { AGENTS, createRun, eventsOf, executionsOf, FAKE, startExecServer, waitForState } from './support.ts';
import type { ExecServer } from './support.ts';

const PROBE = path.join(AGENTS, 'sandbox-probe.mjs');

interface Attempt {
  ok: boolean;
  value?: unknown;
  code?: string;
}
interface Report {
  uid: number;
  gid: number;
  pid: number;
  reads: Record<string, Attempt>;
  lists: Record<string, Attempt>;
  writes: Record<string, Attempt>;
  processes: number[];
  wroteWorkspace: boolean;
}

/** Every file under `dir` (host view). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/** Names under `dir` that lie on the way to `target` (the only ones a bind of `target` may show in `dir`). */
function onTheWay(dir: string, target: string): string | undefined {
  const rel = path.relative(dir, target);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep)[0] : undefined;
}

describe('agents in the bubblewrap sandbox', () => {
  let s: ExecServer;
  beforeAll(async () => {
    // no master key in the configuration: the server writes <data dir>/master.key, as a real start does
    s = await startExecServer('pglite', {
      settings: { bins: { ...FAKE, command: PROBE } },
      config: { masterKey: undefined },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function probe(ask: Record<string, unknown>) {
    const runId = await createRun(s, {
      prompt: `probe\nPROBE ${JSON.stringify(ask)}`,
      config: { harness: { type: 'command' } },
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    const [execution] = await executionsOf(s, runId);
    return { run, execution: execution!, events: await eventsOf(s, runId) };
  }

  it('cannot read the master key, another workspace or the data directory; sees only itself; writes its workspace', async () => {
    const first = await probe({ mark: 'first run secret' });
    expect(first.run.state).toBe('SUCCEEDED');
    const firstWorkspace = first.execution.workspace!;
    expect(readFileSync(path.join(firstWorkspace, 'written-by-agent.txt'), 'utf8')).toBe('first run secret\n');

    const masterKey = path.join(s.dataDir, 'master.key');
    expect(statSync(masterKey).isFile()).toBe(true);
    const dataFiles = filesUnder(s.dataDir);
    expect(dataFiles).toContain(path.join(firstWorkspace, 'written-by-agent.txt'));
    const home = homedir();
    const cwd = process.cwd();
    const planted = {
      dataDir: path.join(s.dataDir, `planted-${process.pid}`),
      system: `/usr/planted-${process.pid}`,
      tmp: `/tmp/agentyard-planted-${process.pid}`,
    };
    const second = await probe({
      mark: 'second',
      read: [masterKey, ...dataFiles, path.join(cwd, 'package.json'), '/etc/shadow'],
      list: [
        s.dataDir,
        path.join(s.dataDir, 'workspaces'),
        path.join(s.dataDir, 'execution-files'),
        home,
        cwd,
        '/root',
      ],
      write: Object.values(planted),
    });
    expect(second.run.state).toBe('SUCCEEDED');
    const workspace = second.execution.workspace!;
    const report = JSON.parse(readFileSync(path.join(workspace, 'probe.json'), 'utf8')) as Report;

    // an unprivileged uid of its own user namespace
    expect(report.uid).toBe(1000);
    expect(report.gid).toBe(1000);
    // nothing of the data directory (the master key, the first run's files), the project or /etc/shadow
    for (const file of [masterKey, ...dataFiles, path.join(cwd, 'package.json'), '/etc/shadow']) {
      expect(report.reads[file], file).toMatchObject({ ok: false });
    }
    // the data directory shows only the way to its own workspace and its own configuration directory
    expect(report.lists[s.dataDir]!.value).toEqual(['execution-files', 'workspaces']);
    expect(report.lists[path.join(s.dataDir, 'workspaces')]!.value).toEqual([second.execution.id]);
    expect(report.lists[path.join(s.dataDir, 'execution-files')]!.value).toEqual([second.execution.id]);
    // the server's home and working directory show only the way to the tools it runs with (node, the fixture)
    const tools = [realpathSync(process.execPath), AGENTS, ...(process.env.PATH ?? '').split(':')];
    for (const dir of [home, cwd]) {
      const allowed = new Set(tools.map((t) => onTheWay(dir, t)).filter(Boolean));
      const listed = report.lists[dir]!;
      if (listed.ok) for (const name of listed.value as string[]) expect(allowed, `${dir}/${name}`).toContain(name);
    }
    // its own /proc: its pid namespace's init, the workspace's wrapper (2) and itself
    expect(report.processes).not.toContain(process.pid);
    // (and the relay of its egress proxy, socat)
    expect(report.processes.filter((p) => p !== 1 && p !== 2 && p !== report.pid).length).toBeLessThanOrEqual(1);
    // the system is read-only; what it writes elsewhere than its workspace (its private /tmp, which here holds
    // the way to its workspace) never reaches the host
    expect(report.writes[planted.system]).toMatchObject({ ok: false });
    for (const file of Object.values(planted)) expect(existsSync(file), file).toBe(false);
    expect(report.wroteWorkspace).toBe(true);
    expect(readFileSync(path.join(workspace, 'written-by-agent.txt'), 'utf8')).toBe('second\n');

    // the run says where and how it ran
    expect(second.run.execution_location).toBe('LOCAL');
    const status = second.events.find((e) => e.type === 'status' && e.data.sandbox);
    expect(status!.data).toMatchObject({ sandbox: 'bubblewrap' });
    expect(status!.data.message).toContain('in a bubblewrap sandbox');
    const inProgress = second.events.find((e) => e.type === 'state' && e.data.state === 'INPROGRESS');
    expect(inProgress!.data.status_message.message).toContain('in a bubblewrap sandbox');
  });

  it('without bubblewrap: runs unsandboxed and says so; refuses when a sandbox is required', async () => {
    const settings = s.parts.settings;
    const sandboxed = settings.sandbox;
    try {
      settings.sandbox = sandboxSettings(s.dataDir, { AGENTYARD_BWRAP_PATH: '/nonexistent/bwrap' });
      const open = await probe({ mark: 'unsandboxed' });
      expect(open.run.state).toBe('SUCCEEDED');
      expect(open.run.status_message.message).toContain(
        '[ran unsandboxed: bubblewrap not found at /nonexistent/bwrap]',
      );
      const report = JSON.parse(readFileSync(path.join(open.execution.workspace!, 'probe.json'), 'utf8')) as Report;
      expect(report.uid).toBe(process.getuid!());
      expect(open.events.find((e) => e.type === 'status' && e.data.sandbox)!.data).toMatchObject({ sandbox: 'none' });

      settings.sandbox = sandboxSettings(s.dataDir, {
        AGENTYARD_BWRAP_PATH: '/nonexistent/bwrap',
        AGENTYARD_REQUIRE_SANDBOX: '1',
      });
      const refused = await probe({ mark: 'refused' });
      expect(refused.run.state).toBe('ERROR');
      expect(refused.run.status_message).toMatchObject({
        error_code: 'environment_setup_failed',
        error_detail: 'sandbox_unavailable',
      });
      expect(refused.run.status_message.message).toBe(
        'no sandbox is available (bubblewrap not found at /nonexistent/bwrap) and AGENTYARD_REQUIRE_SANDBOX is set: the agent was not started',
      );
      expect(existsSync(path.join(refused.execution.workspace ?? s.dataDir, 'probe.json'))).toBe(false);
    } finally {
      settings.sandbox = sandboxed;
    }
  });

  it('finds the image of the runner a run names, or its factory agent names', async () => {
    const db = s.server.ctx.db;
    // runs for a worker that never connects stay queued: nothing here executes them
    const named = await createRun(s, { prompt: 'x', config: { worker_host: 'nobody', runner_id: 'gpu' } });
    const byAgent = await createRun(s, { prompt: 'x', config: { worker_host: 'nobody', name: 'triage' } });
    const none = await createRun(s, { prompt: 'x', config: { worker_host: 'nobody', name: 'other' } });
    const team = (await db.query<{ team_id: string }>('SELECT team_id FROM runs WHERE id = $1', [named])).rows[0]!;
    const definition = {
      agents: [{ name: 'triage', execution: { runner: 'linux' } }],
      runners: [
        { name: 'linux', platform: { os: 'linux', dockerImage: 'ghcr.io/acme/linux:1' } },
        { name: 'gpu', platform: { os: 'linux', dockerImage: 'ghcr.io/acme/gpu:2' } },
      ],
    };
    await db.query(
      `INSERT INTO factories (id, team_id, name, source, definition) VALUES ('fac_images', $1, 'images', '{"type":"managed"}', $2)`,
      [team.team_id, JSON.stringify(definition)],
    );
    await db.query(`UPDATE runs SET factory_id = 'fac_images' WHERE id = ANY($1::text[])`, [[named, byAgent, none]]);
    const settings = await factoryRunSettings(db, [named, byAgent, none], []);
    const images = [...settings].flatMap(([id, r]) => (r.image ? [[id, r.image]] : []));
    expect(Object.fromEntries(images)).toEqual({ [named]: 'ghcr.io/acme/gpu:2', [byAgent]: 'ghcr.io/acme/linux:1' });
  });

  it('a container runtime whose engine is unreachable refuses the run with its diagnostic', async () => {
    const settings = s.parts.settings;
    const sandboxed = settings.sandbox;
    try {
      // Debian's docker client is installed here, its engine is not: the client's own error is the diagnostic
      settings.sandbox = sandboxSettings(s.dataDir, {
        AGENTYARD_CONTAINER_RUNTIME: 'docker',
        AGENTYARD_CONTAINER_IMAGE: 'debian:bookworm-slim',
      });
      const refused = await probe({ mark: 'container' });
      expect(refused.run.state).toBe('ERROR');
      expect(refused.run.status_message).toMatchObject({
        error_code: 'environment_setup_failed',
        error_detail: 'sandbox_unavailable',
      });
      expect(refused.run.status_message.message).toMatch(
        /^the run's container could not be started: the container runtime (docker is unreachable \(.+\)|client "docker" is not installed)$/,
      );
    } finally {
      settings.sandbox = sandboxed;
    }
  });
});
