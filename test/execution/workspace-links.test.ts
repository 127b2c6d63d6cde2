/**
 * An agent that leaves symbolic links in its workspace cannot make the server write or read host files
 * (issue 28, item 1). Agents run under the `command` harness in the real bubblewrap sandbox and do what their
 * prompt says in a shell (fixtures/agents/shell-agent.mjs); the follow-up that would reuse their workspace
 * leaves the host files untouched and goes on in a fresh workspace, with an error event naming the link.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAKE,
  SHELL_AGENT,
  runShellScript,
  createRun,
  eventsOf,
  executionsOf,
  startExecServer,
  waitForState,
  whenRunsTold,
} from './support.ts';
import type { ExecServer } from './support.ts';

describe('links an agent leaves in its workspace', () => {
  let s: ExecServer;
  let host: string;
  beforeAll(async () => {
    s = await startExecServer('pglite', { settings: { bins: { ...FAKE, command: SHELL_AGENT } } });
    host = mkdtempSync(path.join(tmpdir(), 'agentyard-host-'));
  });
  afterAll(async () => {
    await s?.close();
    if (host) rmSync(host, { recursive: true, force: true });
  });

  function hostFile(name: string, content: string): string {
    const file = path.join(host, name);
    writeFileSync(file, content);
    return file;
  }

  async function shellRun(script: string, extra: Record<string, unknown> = {}): Promise<string> {
    const { run, runId } = await runShellScript(s, script, extra);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    return runId;
  }

  /** Sends a follow-up and waits for the run to end again. */
  async function followUp(runId: string): Promise<any> {
    const before = (await executionsOf(s, runId)).length;
    const res = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'Go on' });
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('QUEUED');
    await whenRunsTold(s, 'the follow-up execution to end', async () => {
      const executions = await executionsOf(s, runId);
      return executions.length > before && executions.at(-1)!.ended_at !== null;
    });
    return (await s.api('GET', `/agent/runs/${runId}`)).body;
  }

  it('a follow-up does not write the attachment or passwd through links to host files', async () => {
    const passwdTarget = hostFile('harness-executable', 'ORIGINAL HARNESS\n');
    const payloadTarget = hostFile('other-file', 'ORIGINAL OTHER\n');
    const runId = await shellRun(
      `mkdir -p .agentyard; rm -f .agentyard/passwd payload.txt; ln -s ${passwdTarget} .agentyard/passwd; ln -s ${payloadTarget} payload.txt`,
      {
        attachments: [
          { file_name: 'payload.txt', mime_type: 'text/plain', data: Buffer.from('ATTACKER').toString('base64') },
        ],
      },
    );
    const run = await followUp(runId);

    expect(readFileSync(passwdTarget, 'utf8')).toBe('ORIGINAL HARNESS\n');
    expect(readFileSync(payloadTarget, 'utf8')).toBe('ORIGINAL OTHER\n');
    // the follow-up goes on in a fresh workspace, and its run says why the old one was not carried over
    expect(run.state).toBe('SUCCEEDED');
    const refused = (await eventsOf(s, runId)).filter((e) => e.type === 'error');
    expect(refused.map((e) => e.data)).toEqual([
      {
        message:
          'the previous workspace was not carried over: payload.txt is a symbolic link (the server follows no link in a workspace); this execution starts in an empty workspace, without the CLI session it held',
        fatal: false,
        error_code: 'workspace_link_refused',
      },
    ]);
    const last = (await executionsOf(s, runId)).at(-1)!;
    expect(lstatSync(path.join(last.workspace!, 'payload.txt')).isFile()).toBe(true);
    expect(readFileSync(path.join(last.workspace!, 'payload.txt'), 'utf8')).toBe('ATTACKER');
    // the sandbox's own files are not in the workspace at all
    expect(readdirSync(path.join(last.workspace!, '.agentyard'))).toEqual(['home']);
  });

  it('a follow-up does not create the agent home through a linked directory in the middle of the path', async () => {
    const dir = path.join(host, 'linked-dir');
    mkdirSync(dir);
    const runId = await shellRun(`rm -rf .agentyard; ln -s ${dir} .agentyard`);
    const run = await followUp(runId);

    expect(readdirSync(dir)).toEqual([]);
    expect(run.state).toBe('SUCCEEDED');
    const refused = (await eventsOf(s, runId)).filter((e) => e.type === 'error');
    expect(refused.map((e) => e.data.message)).toEqual([
      'the previous workspace was not carried over: .agentyard is a symbolic link (the server follows no link in a workspace); this execution starts in an empty workspace, without the CLI session it held',
    ]);
  });

  it("a follow-up does not write a CLI's configuration through a linked directory of the agent's home", async () => {
    await s.api('PUT', '/secrets/key', { value: 'sk-links-0123456789' });
    const runId = await createRun(s, {
      prompt: 'Plan it',
      config: { harness: { type: 'codex' }, harness_auth_secrets: { codex_auth_secret_name: 'key' } },
    });
    await waitForState(s, runId, ['SUCCEEDED']);
    const [first] = await executionsOf(s, runId);
    // what the codex agent could do with its shell: its CLI home becomes a link to a host directory
    const dir = path.join(host, 'codex-home');
    mkdirSync(dir);
    const codexHome = path.join(first!.workspace!, '.agentyard', 'home', '.codex');
    rmSync(codexHome, { recursive: true, force: true });
    symlinkSync(dir, codexHome);
    const run = await followUp(runId);

    expect(readdirSync(dir)).toEqual([]);
    expect(run.state).toBe('SUCCEEDED');
    const refused = (await eventsOf(s, runId)).filter((e) => e.type === 'error');
    expect(refused.map((e) => e.data.message)).toEqual([
      'the previous workspace was not carried over: .agentyard/home/.codex is a symbolic link (the server follows no link in a workspace); this execution starts in an empty workspace, without the CLI session it held',
    ]);
  });

  it('never reads a host file an artifact points at through a link, at its end or on its way', async () => {
    const secret = hostFile('secret.txt', 'HOST SECRET\n');
    const runId = await shellRun(
      [
        `ln -s ${secret} leak.txt`,
        `ln -s ${host} hostdir`,
        'mkdir -p out && echo inside > out/real.txt && ln -s real.txt out/alias.txt',
        `echo '{"type":"artifact","artifact_type":"FILE","data":{"filepath":"leak.txt"}}'`,
        `echo '{"type":"artifact","artifact_type":"FILE","data":{"filepath":"hostdir/secret.txt"}}'`,
        `echo '{"type":"artifact","artifact_type":"FILE","data":{"filepath":"out/alias.txt"}}'`,
        `echo '{"type":"artifact","artifact_type":"FILE","data":{"filepath":"out/real.txt"}}'`,
      ].join('\n'),
    );
    const events = await eventsOf(s, runId);
    const errors = events.filter((e) => e.type === 'error').map((e) => e.data.message);
    expect(errors).toEqual([
      'artifact leak.txt: leak.txt is a symbolic link (the server follows no link in a workspace)',
      'artifact hostdir/secret.txt: hostdir is a symbolic link (the server follows no link in a workspace)',
      'artifact out/alias.txt: out/alias.txt is a symbolic link (the server follows no link in a workspace)',
    ]);
    const files = await s.server.ctx.db.query<{ data: Uint8Array }>(
      'SELECT data FROM run_artifact_files WHERE run_id = $1',
      [runId],
    );
    expect(files.rows.map((r) => Buffer.from(r.data).toString())).toEqual(['inside\n']);
  });

  it("the server's files for an execution are gone when it ends; a crashed runner's are swept", async () => {
    const runId = await shellRun('cat /etc/passwd > seen-passwd.txt');
    const [execution] = await executionsOf(s, runId);
    const configRoot = path.join(s.dataDir, 'execution-files');
    // the sandbox saw its own passwd, which is gone with the execution
    expect(readFileSync(path.join(execution!.workspace!, 'seen-passwd.txt'), 'utf8')).toContain('agent:x:1000:1000');
    expect(existsSync(path.join(configRoot, execution!.id))).toBe(false);
    // left by a runner that died: no running execution has it
    const stale = path.join(configRoot, 'exe_01zzzzzzzzzzzzzzzzzzzzzzzz');
    mkdirSync(stale, { recursive: true });
    writeFileSync(path.join(stale, 'claude-mcp.json'), '{}');
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(stale, old, old);
    await s.parts.sweeper.sweep();
    expect(existsSync(stale)).toBe(false);
  });
});
