import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { adapterFor } from '../execution/harnesses/index.ts';
import { buildAssignment } from '../execution/assignment-builder.ts';
import { applyFactorySettings } from '../execution/runner-settings.ts';
import { promptWithNotes } from '../execution/runner.ts';
import type { BuiltinAgentSettings } from '../execution/harnesses/agentyard.ts';
import type { HarnessBins } from '../execution/settings.ts';
import type { HarnessType } from '../execution/settings.ts';
import { createWorkspace, writeAssignmentFiles } from '../execution/workspace.ts';
import type { RunRow } from '../engine/model.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Queryable } from '../kernel/db.ts';
import { WORKSPACE_DIR } from './job-spec.ts';

/** The agent of a Job: its command line, its files in the workspace, and what goes to stdin. */
export interface JobInvocation {
  harness: HarnessType;
  executionId: string;
  /** Follow-ups the prompt delivers (consumed when the pod starts). */
  followupIds: string[];
  /** The complete command (executable first), with paths as they are inside the pod. */
  command: string[];
  /** Plain environment variables. */
  env: Record<string, string>;
  /** Environment variables holding secrets (provider keys): set from the per-run Secret, never in the Job spec. */
  secretEnv: Record<string, string>;
  /** Written to the agent's stdin (then end of input). */
  stdin: string | undefined;
  /** Files the harness prepared, relative to the workspace; an init container copies them in. */
  files: { path: string; content: Buffer }[];
}

export interface HarnessSettings {
  /** The harness of runs that name none (`oz`). */
  defaultHarness: HarnessType | undefined;
  /** The CLI executable of each harness inside the runner image. */
  bins: HarnessBins;
  commandArgs: string[];
  /** The built-in agent's endpoint and limits (its key goes to the per-run Secret, like a provider key). */
  builtin?: BuiltinAgentSettings;
}

export class InvocationError extends Error {
  readonly errorCode: string;
  constructor(errorCode: string, message: string) {
    super(message);
    this.name = 'InvocationError';
    this.errorCode = errorCode;
  }
}

async function listFiles(root: string, dir = root): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(root, full)));
    else if (entry.isFile()) out.push(path.relative(root, full));
  }
  return out.sort();
}

/**
 * Prepares a run's agent for a Job with the service's own harness adapters: the execution assignment (prompt,
 * skill, attachments, provider key from the team's secrets), then the adapter's workspace files and command
 * line, made in a scratch directory whose path is rewritten to the pod's workspace.
 */
export async function prepareJobInvocation(
  deps: {
    db: Queryable;
    secrets: SecretProvider;
    sessionLink: (sessionId: string) => string;
    factoryMcpUrl?: () => string;
  },
  run: RunRow,
  execution: { id: string; attempt: number; harness: HarnessType },
  settings: HarnessSettings,
): Promise<JobInvocation> {
  const { harness, id: executionId } = execution;
  let assignment;
  try {
    assignment = await buildAssignment(deps.db, deps.secrets, {
      run,
      executionId,
      attempt: execution.attempt,
      harness,
      sessionLink: deps.sessionLink,
      ...(deps.factoryMcpUrl ? { factoryMcpUrl: deps.factoryMcpUrl } : {}),
    });
    // a connection token the run's secrets ask for (the Job's runner comes from its own spec)
    await applyFactorySettings(deps.db, deps.secrets, [run], [assignment], { images: false, runner: false });
  } catch (err) {
    const code = (err as { errorCode?: string }).errorCode;
    if (code) throw new InvocationError(code, (err as Error).message);
    throw err;
  }
  const scratch = await mkdtemp(path.join(tmpdir(), 'agentyard-job-'));
  try {
    const ws = await createWorkspace(scratch, executionId);
    const names = await writeAssignmentFiles(ws.dir, assignment);
    const prompt = promptWithNotes(assignment, names);
    const inPod = (text: string): string => text.split(ws.dir).join(WORKSPACE_DIR);
    let command: string[];
    let env: Record<string, string> = {};
    let stdin: string | undefined;
    if (harness === 'noop') {
      command = ['/bin/sh', '-c', 'echo "noop harness: nothing to do"'];
    } else {
      const adapter = adapterFor(harness)!;
      const invocation = await adapter.prepare({
        assignment,
        workspace: ws,
        bin: settings.bins[harness] ?? '',
        extraArgs: harness === 'command' ? settings.commandArgs : [],
        prompt,
        ...(settings.builtin ? { builtin: settings.builtin } : {}),
      });
      command = [invocation.command, ...invocation.args].map(inPod);
      // values the invocation marks secret travel in the per-run Secret, never in the Job spec
      const secretValues = new Set(invocation.secrets ?? []);
      for (const [k, v] of Object.entries(invocation.env))
        if (secretValues.has(v) && !(k in assignment.secretEnv)) assignment.secretEnv[k] = v;
      env = Object.fromEntries(
        Object.entries(invocation.env)
          .filter(([k]) => !(k in assignment.secretEnv) && k !== 'AGENTYARD_RUN_TOKEN')
          .map(([k, v]) => [k, inPod(v)]),
      );
      stdin = invocation.input === undefined ? undefined : inPod(invocation.input);
    }
    const files: JobInvocation['files'] = [];
    for (const rel of await listFiles(ws.dir))
      files.push({ path: rel.split(path.sep).join('/'), content: await readFile(path.join(ws.dir, rel)) });
    return {
      harness,
      executionId,
      followupIds: assignment.followups.map((f) => f.id),
      command,
      env: {
        ...env,
        HOME: `${WORKSPACE_DIR}/${path.relative(ws.dir, ws.home).split(path.sep).join('/')}`,
        AGENTYARD_WORKSPACE: WORKSPACE_DIR,
        AGENTYARD_EXECUTION_ID: executionId,
        TERM: 'dumb',
        NO_COLOR: '1',
        CI: 'true',
      },
      // the run token travels like a secret (a Secret of the Job, never its spec)
      secretEnv: {
        ...assignment.secretEnv,
        ...(harness === 'command' && assignment.factoryMcp ? { AGENTYARD_RUN_TOKEN: assignment.factoryMcp.token } : {}),
      },
      stdin,
      files,
    };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
