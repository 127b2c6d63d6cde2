/**
 * Runs one execution assignment on this host: prepares the workspace, starts the harness's CLI, turns its output
 * into events, hands follow-ups to it, watches the workspace size, and reads its exit. The service's
 * executors and self-hosted workers both run assignments through this.
 */
import { constants } from 'node:os';
import path from 'node:path';
import { withArtifactContent } from './artifact-content.ts';
import { AgentProcess } from './agent-process.ts';
import { adapterFor } from './harnesses/index.ts';
import type { HarnessAdapter, Invocation } from './harnesses/types.ts';
import type { AgentEvent, ExecutionOutcome, Assignment, AssignmentFollowup } from './assignment.ts';
import { removeContainer } from './sandbox/container.ts';
import { sandboxInvocation } from './sandbox/index.ts';
import type { SandboxedInvocation, SandboxKind, SandboxRequest } from './sandbox/index.ts';
import { networkPolicyFrom, policyText, serverException } from './egress/policy.ts';
import type { ServerException } from './egress/policy.ts';
import { startEgressProxy } from './egress/proxy.ts';
import type { EgressProxy, EgressRecord } from './egress/proxy.ts';
import { egressSummary } from './egress/summary.ts';
import type { ExecutionSettings } from './settings.ts';
import { effectiveLimits, sizeText } from './limits.ts';
import type { ExecutionLimits } from './limits.ts';
import { redact, secretForms } from './redaction.ts';
import { usageBudgetPassed } from './usage-budget.ts';
import {
  createWorkspace,
  removeConfigDir,
  removeWorkspace,
  workspaceSize,
  workspaceUsage,
  writeAssignmentFiles,
} from './workspace.ts';
import { WorkspacePathError } from './workspace-fs.ts';
import { SandboxWorkspace } from './sandbox-workspace.ts';
import { checkoutRepositories, startingRepoRefs } from './repo-checkout.ts';
import type { Workspace } from './workspace.ts';

export interface RunnerHooks {
  /**
   * The agent is about to start, `sandbox` saying how ("in a bubblewrap sandbox…", "unsandboxed: …"). Resolves
   * false when the execution must not go on (cancelled, lease lost).
   */
  starting(info: { workspace: string; sandbox: string }): Promise<boolean>;
  /** Events, in the order the agent reported them (already stripped of secret values). */
  events(events: AgentEvent[]): void;
}

export type StopReason = 'cancelled' | 'lost' | 'shutdown';

/** stderr lines kept as `log` events per execution; the rest are counted. */
const MAX_STDERR_EVENTS = 200;
/**
 * How often the workspace's disk use is measured: at least every second, and at most every 5 s; in between,
 * ten times as long as the last measurement took (a workspace of many files is not walked back to back).
 */
const SIZE_CHECK_MIN_MS = 1_000;
const SIZE_CHECK_MAX_MS = 5_000;
/** How long a stopped sandbox's wrapper has to start copying its workspace out before the sandbox is killed. */
const WRAPPER_WAIT_MS = 10_000;

/** The environment every agent starts from; nothing else of the executor's own environment is passed. */
const BASE_ENV_VARS = [
  'PATH',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
];

/** The prompt with what the workspace holds for the agent: the skill and the attachments. */
export function promptWithNotes(assignment: Assignment, fileNames: readonly string[]): string {
  const notes: string[] = [];
  if (assignment.skill?.resolved)
    notes.push(
      `Use the skill "${assignment.skill.name}": read .agents/skills/${assignment.skill.name}/SKILL.md in the working directory and follow it.`,
    );
  else if (assignment.skill)
    notes.push(
      `The skill "${assignment.skill.spec}" was requested but could not be provided (${assignment.skill.reason}).`,
    );
  if (fileNames.length) notes.push(`Files attached to this run, in the working directory: ${fileNames.join(', ')}.`);
  const body = assignment.prompt.trim()
    ? assignment.prompt
    : assignment.skill
      ? `Carry out the skill "${assignment.skill.name}".`
      : assignment.prompt;
  return notes.length ? `${body}\n\n---\n${notes.join('\n')}\n` : body;
}

export class ExecutionRunner {
  readonly assignment: Assignment;
  readonly done: Promise<ExecutionOutcome>;
  readonly #settings: ExecutionSettings;
  readonly #hooks: RunnerHooks;
  #secrets: string[];
  #adapter: HarnessAdapter | undefined;
  #process: AgentProcess | undefined;
  #stopReason: StopReason | undefined;
  /** Aborts what preparing the workspace runs (a starting repository's fetch) when the execution is stopped. */
  readonly #preparing = new AbortController();
  #stopError: { message: string; errorCode: string; kind?: 'failed' | 'error' } | undefined;
  readonly #limits: ExecutionLimits;
  #eventCount = 0;
  #outputBytes = 0;
  #overLimit = false;
  /** What the preparation of the execution has to say once it starts (a workspace not carried over). */
  readonly #notes: AgentEvent[] = [];
  /** What is being prepared, for the message of a failure. */
  #stage: 'workspace' | 'repositories' | 'harness' = 'workspace';
  #workspace: Workspace | undefined;
  #sandbox: SandboxKind | undefined;
  #sessionId: string | undefined;
  #deliveredLive = 0;
  #turnsDone = 0;
  #usage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, cost_usd: 0 };
  #egress: EgressProxy | undefined;
  readonly #egressRecords: EgressRecord[] = [];
  /** The sandbox's own workspace (a tmpfs of the limit), when it has one: copied back at the end. */
  #inSandbox: SandboxWorkspace | undefined;

  constructor(assignment: Assignment, settings: ExecutionSettings, hooks: RunnerHooks) {
    this.assignment = assignment;
    this.#settings = settings;
    this.#hooks = hooks;
    this.#limits = effectiveLimits(settings.limits, settings.workspaceMaxBytes, assignment.limits);
    this.#secrets = [
      ...new Set(
        [...Object.values(assignment.secretEnv), ...(assignment.factoryMcp ? [assignment.factoryMcp.token] : [])]
          .filter((v) => v.length >= 6)
          .flatMap((v) => secretForms(v)),
      ),
    ].sort((a, b) => b.length - a.length);
    this.done = this.#run()
      .catch((err: unknown) => ({
        kind: 'error' as const,
        exitCode: null,
        message: `the executor failed: ${redact(err instanceof Error ? err.message : String(err), this.#secrets)}`,
        errorCode: 'executor_failed',
      }))
      .finally(() => (this.#workspace ? removeConfigDir(this.#workspace).catch(() => {}) : undefined));
  }

  /** Usage the agent reported so far, summed over its turns. */
  get usage(): Readonly<Record<string, number>> {
    return this.#usage;
  }

  #emit(events: AgentEvent[]): void {
    if (events.length === 0 || this.#overLimit) return;
    if (this.#eventCount + events.length > this.#limits.events) {
      events = events.slice(0, Math.max(0, this.#limits.events - this.#eventCount));
      this.#eventCount = this.#limits.events;
      this.#emit(events);
      this.#passLimit(
        `the agent reported more than ${this.#limits.events} events (the execution's event limit)`,
        'event_limit_exceeded',
      );
      return;
    }
    this.#eventCount += events.length;
    for (const e of events) {
      if (e.type === 'session' && typeof e.data.session_id === 'string') this.#sessionId = e.data.session_id;
      if (e.type === 'usage') {
        for (const key of ['input_tokens', 'output_tokens', 'cached_input_tokens', 'cost_usd'] as const) {
          const v = e.data[key];
          if (typeof v === 'number' && Number.isFinite(v) && v >= 0) this.#usage[key] += v;
        }
      }
    }
    this.#hooks.events(redact(events, this.#secrets));
    if (events.some((e) => e.type === 'usage')) this.#checkUsageBudgets();
  }

  /**
   * The run's token and cost budgets (`config.max_tokens`, `config.max_cost_usd`) against its earlier executions'
   * usage and what this agent has reported: past one, it is stopped like at any limit (FAILED, `budget_exceeded`,
   * its output and workspace kept). Checked as usage arrives, so as often as the harness reports it.
   */
  #checkUsageBudgets(): void {
    const passed = usageBudgetPassed(this.assignment.run.config, this.assignment.run.usage, this.#usage);
    if (passed) this.#passLimit(passed.message, passed.errorCode);
  }

  /**
   * Hands a follow-up to the running agent at its next turn. False when the harness takes none while running
   * (or the agent has finished its last turn): the follow-up waits for the next execution.
   */
  deliverFollowup(followup: AssignmentFollowup): boolean {
    const input = this.#adapter?.followupInput;
    if (!input || !this.#process?.stdinOpen || this.#stopReason) return false;
    if (!this.#process.write(input(followup.message))) return false;
    this.#deliveredLive += 1;
    this.#emit([{ type: 'followup', data: { followup_id: followup.id, message: followup.message, delivery: 'live' } }]);
    return true;
  }

  /**
   * The agent used more than a limit lets it (events, output, disk): it is stopped, its run ends FAILED with a
   * message naming the limit, and nothing more it reports is kept.
   */
  #passLimit(message: string, errorCode: string): void {
    if (this.#overLimit) return;
    // the last event kept says why the rest is not
    this.#hooks.events([{ type: 'error', data: { message, fatal: true, error_code: errorCode } }]);
    this.#overLimit = true;
    void this.stop('shutdown', { message, errorCode, kind: 'failed' });
  }

  /** Counts the agent's output as it arrives; past the limit the agent is stopped. */
  #countOutput(bytes: number): void {
    this.#outputBytes += bytes;
    if (this.#outputBytes <= this.#limits.outputBytes) return;
    this.#passLimit(
      `the agent printed more than ${sizeText(this.#limits.outputBytes)} of output (the execution's output limit)`,
      'output_limit_exceeded',
    );
  }

  /** Stops the agent's process tree; the outcome says why. */
  async stop(
    reason: StopReason,
    error?: { message: string; errorCode: string; kind?: 'failed' | 'error' },
  ): Promise<void> {
    this.#stopReason ??= reason;
    if (error) this.#stopError ??= error;
    this.#preparing.abort();
    await this.#stopProcess();
    if (this.#sandbox === 'container' && this.#settings.sandbox.containerRuntime)
      await removeContainer(this.#settings.sandbox.containerRuntime, this.assignment.executionId);
  }

  /**
   * Stops the agent's processes. A sandbox with its own workspace keeps its init and wrapper, which copy the
   * workspace out once the rest is gone; should the wrapper not get there (the agent stopped or killed it),
   * the whole sandbox is killed after WRAPPER_WAIT_MS, and the host's workspace keeps what the agent started with.
   */
  async #stopProcess(): Promise<void> {
    const proc = this.#process;
    if (!proc) return;
    const inSandbox = this.#inSandbox;
    // before the agent has started in it, the sandbox holds nothing the host's workspace does not
    if (!inSandbox?.agentStarted) return proc.stop(this.#settings.killGraceMs);
    await proc.stop(this.#settings.killGraceMs, (tree) => inSandbox.spared(tree));
    const timer = setTimeout(() => {
      if (!inSandbox.copyStarted) void proc.killAll();
    }, WRAPPER_WAIT_MS);
    timer.unref();
    void proc.exited.then(() => clearTimeout(timer));
  }

  #workspaceFull(): string {
    return `the workspace reached its limit of ${sizeText(this.#limits.workspaceBytes)} (the execution's workspace limit, a filesystem of that size; files deleted but still open count)`;
  }

  #outcome(
    kind: ExecutionOutcome['kind'],
    exitCode: number | null,
    message: string,
    errorCode?: string,
  ): ExecutionOutcome {
    return {
      kind,
      exitCode,
      message: redact(message, this.#secrets),
      ...(errorCode ? { errorCode } : {}),
      ...(this.#sessionId ? { agentSessionId: this.#sessionId } : {}),
      ...(this.#workspace ? { workspace: this.#workspace.dir } : {}),
    };
  }

  /** The outcome of an execution stopped by `stop()` (or refused at its start: cancelled, lease lost). */
  #stopped(exitCode: number | null): ExecutionOutcome {
    if (this.#stopError)
      return this.#outcome(
        this.#stopError.kind ?? 'error',
        exitCode,
        this.#stopError.message,
        this.#stopError.errorCode,
      );
    switch (this.#stopReason) {
      case 'cancelled':
        return this.#outcome('cancelled', exitCode, 'stopped: the run was cancelled');
      case 'shutdown':
        return this.#outcome('error', exitCode, 'the executor shut down', 'executor_stopped');
      default:
        return this.#outcome(
          'lost',
          exitCode,
          'stopped: the execution is no longer the run’s (lease lost or taken over)',
        );
    }
  }

  /**
   * The workspace, the run's files in it, and the harness's files and command line. When the previous agent left
   * a link where the server writes (an attachment's name, `.agentyard`, a skill or CLI directory), its workspace
   * is not carried over (the server would have to follow the link): the execution goes on in a fresh one, and
   * its run says why.
   */
  async #prepare(
    adapter: HarnessAdapter,
  ): Promise<{ invocation: Invocation; prompt: string } | { failed: ExecutionOutcome }> {
    const assignment = this.assignment;
    try {
      return await this.#prepareIn(adapter, assignment.previousExecutionId, assignment);
    } catch (err) {
      if (!(err instanceof WorkspacePathError) || !assignment.previousExecutionId)
        return { failed: this.#preparationFailed(err) };
      await removeWorkspace(path.join(this.#settings.workspaceRoot, assignment.executionId));
      if (this.#workspace) await removeConfigDir(this.#workspace);
      this.#workspace = undefined;
      this.#notes.push({
        type: 'error',
        data: {
          message: `the previous workspace was not carried over: ${err.message}; this execution starts in an empty workspace${assignment.resumeSessionId ? ', without the CLI session it held' : ''}`,
          fatal: false,
          error_code: 'workspace_link_refused',
        },
      });
    }
    try {
      // the CLI's session was in the old workspace
      return await this.#prepareIn(adapter, undefined, { ...assignment, resumeSessionId: undefined });
    } catch (err) {
      return { failed: this.#preparationFailed(err) };
    }
  }

  async #prepareIn(
    adapter: HarnessAdapter,
    previous: string | undefined,
    assignment: Assignment,
  ): Promise<{ invocation: Invocation; prompt: string }> {
    const { workspaceRoot, configRoot } = this.#settings;
    this.#stage = 'workspace';
    const ws = await createWorkspace(workspaceRoot, assignment.executionId, previous, configRoot);
    this.#workspace = ws;
    const refs = startingRepoRefs(assignment.run);
    if (refs.length > 0 && !ws.carriedOver) {
      this.#stage = 'repositories';
      const scratch = path.join(workspaceRoot, `${assignment.executionId}.repositories`);
      await checkoutRepositories(refs, ws.dir, scratch, this.#settings.repositories, this.#preparing.signal);
      this.#stage = 'workspace';
    }
    const prompt = promptWithNotes(assignment, await writeAssignmentFiles(ws.dir, assignment));
    this.#stage = 'harness';
    const invocation = await adapter.prepare({
      assignment,
      workspace: ws,
      bin: this.#settings.bins[assignment.harness as Exclude<typeof assignment.harness, 'noop'>] ?? '',
      extraArgs: assignment.harness === 'command' ? this.#settings.commandArgs : [],
      prompt,
      builtin: this.#settings.builtin,
    });
    return { invocation, prompt };
  }

  #preparationFailed(err: unknown): ExecutionOutcome {
    const message = (err as Error).message;
    return this.#outcome(
      'error',
      null,
      this.#stage === 'repositories'
        ? `the starting repositories could not be checked out: ${message}`
        : this.#stage === 'workspace'
          ? `the workspace could not be prepared: ${message}`
          : `the ${this.assignment.harness} harness could not be prepared: ${message}`,
      'environment_setup_failed',
    );
  }

  #environment(invocation: Invocation, ws: Workspace): Record<string, string> {
    const env: Record<string, string> = {};
    for (const name of [...BASE_ENV_VARS, ...this.#settings.passEnv]) {
      const value = process.env[name];
      if (value !== undefined && !(name in this.assignment.secretEnv)) env[name] = value;
    }
    return {
      ...env,
      HOME: ws.home,
      TERM: 'dumb',
      NO_COLOR: '1',
      CI: 'true',
      AGENTYARD_RUN_ID: this.assignment.runId,
      AGENTYARD_EXECUTION_ID: this.assignment.executionId,
      AGENTYARD_WORKSPACE: ws.dir,
      ...invocation.env,
    };
  }

  /** What the agent starts with, recorded once it starts: the skill, left-out MCP servers, follow-ups in the prompt. */
  #emitPrelude(): void {
    const assignment = this.assignment;
    this.#emit(this.#notes);
    if (assignment.skill) {
      this.#emit([
        {
          type: 'skill',
          data: assignment.skill.resolved
            ? {
                spec: assignment.skill.spec,
                name: assignment.skill.name,
                resolved: true,
                skill_path: `.agents/skills/${assignment.skill.name}/SKILL.md`,
                source: assignment.skill.source,
              }
            : {
                spec: assignment.skill.spec,
                name: assignment.skill.name,
                resolved: false,
                reason: assignment.skill.reason,
              },
        },
      ]);
    }
    const unresolvedMcp = Object.entries(assignment.mcpServers).filter(([, s]) => !s.command && !s.url);
    if (unresolvedMcp.length) {
      this.#emit([
        {
          type: 'status',
          data: {
            message: `MCP servers named only by a hosted id were left out: ${unresolvedMcp.map(([n]) => n).join(', ')}`,
          },
        },
      ]);
    }
    if (assignment.followups.length) {
      this.#emit(
        assignment.followups.map((f) => ({
          type: 'followup' as const,
          data: { followup_id: f.id, message: f.message, delivery: 'prompt' },
        })),
      );
    }
  }

  async #run(): Promise<ExecutionOutcome> {
    const assignment = this.assignment;
    if (assignment.harness === 'noop') {
      // the benchmark harness: no agent, so no workspace either
      if (!(await this.#hooks.starting({ workspace: '', sandbox: 'with no agent process' })) || this.#stopReason)
        return this.#stopped(null);
      this.#emitPrelude();
      this.#emit([
        { type: 'message', data: { role: 'assistant', text: 'noop harness: nothing to do' } },
        { type: 'result', data: { text: 'done', is_error: false } },
      ]);
      return this.#outcome('succeeded', 0, 'noop harness: done');
    }
    const adapter = adapterFor(assignment.harness)!;
    this.#adapter = adapter;
    const prepared = await this.#prepare(adapter);
    if ('failed' in prepared) return this.#stopReason ? this.#stopped(null) : prepared.failed;
    const { invocation } = prepared;
    const ws = this.#workspace!;
    if (invocation.secrets?.length) {
      const extra = invocation.secrets.filter((v) => v.length >= 6).flatMap((v) => secretForms(v));
      this.#secrets = [...new Set([...this.#secrets, ...extra])].sort((a, b) => b.length - a.length);
    }
    const env = this.#environment(invocation, ws);
    let sandboxed;
    let egress: SandboxRequest['egress'];
    try {
      egress = await this.#startEgress();
    } catch (err) {
      return this.#outcome(
        'error',
        null,
        `the egress proxy could not be started: ${(err as Error).message}`,
        'environment_setup_failed',
      );
    }
    try {
      sandboxed = await sandboxInvocation(
        {
          ...this.#settings.sandbox,
          hidden: [...this.#settings.sandbox.hidden, this.#settings.workspaceRoot, this.#settings.configRoot],
        },
        {
          invocation,
          workspace: ws,
          env,
          image: assignment.image,
          executionId: assignment.executionId,
          limits: this.#limits,
          ...(egress ? { egress } : {}),
        },
      );
    } catch (err) {
      return this.#outcome(
        'error',
        null,
        `the sandbox could not be prepared: ${(err as Error).message}`,
        'environment_setup_failed',
      );
    }
    if (sandboxed.kind === 'refused') return this.#outcome('error', null, sandboxed.message, 'sandbox_unavailable');
    if (sandboxed.kind === 'not_found')
      return this.#outcome('error', null, this.#notFound(invocation), 'harness_unavailable');
    const sandbox: SandboxKind = sandboxed.kind;
    this.#sandbox = sandbox;
    try {
      return await this.#start(sandboxed, invocation, env, ws);
    } finally {
      await sandboxed.cleanup?.();
      await this.#stopEgress();
    }
  }

  /**
   * The execution's egress proxy, when its agent will get its own network namespace: every sandboxed run but
   * those with the host's network (`AGENTYARD_SANDBOX_NETWORK=host`) and those with `network: none`.
   */
  async #startEgress(): Promise<SandboxRequest['egress']> {
    const sandbox = this.#settings.sandbox;
    if (!sandbox.enabled || sandbox.network === 'host') return undefined;
    const policy = networkPolicyFrom(this.assignment.network);
    if (policy.mode === 'none') return { kind: 'none', policy: policyText(policy) };
    const exceptions = [this.#settings.serverUrl?.(), this.#settings.builtin.baseUrl, ...sandbox.egressAllowAddresses]
      .map(serverException)
      .filter((e): e is ServerException => e !== undefined);
    this.#egress = await startEgressProxy({
      policy,
      exceptions,
      onRecord: (record) => {
        this.#egressRecords.push(record);
        this.#emit([{ type: 'egress', data: { ...record } }]);
      },
    });
    return { kind: 'proxy', socketDir: this.#egress.dir, policy: policyText(policy) };
  }

  /** Closes the proxy (its last connections are reported) and says what went through it. */
  async #stopEgress(): Promise<void> {
    const proxy = this.#egress;
    if (!proxy) return;
    this.#egress = undefined;
    await proxy.close().catch(() => {});
    if (this.#sandbox === 'bubblewrap' || this.#sandbox === 'container')
      this.#emit([{ type: 'status', data: egressSummary(this.#egressRecords) }]);
  }

  async #start(
    sandboxed: Extract<SandboxedInvocation, { command: string }>,
    invocation: Invocation,
    env: Record<string, string>,
    ws: Workspace,
  ): Promise<ExecutionOutcome> {
    const assignment = this.assignment;
    const adapter = this.#adapter!;
    const sandbox = sandboxed.kind;
    if (!(await this.#hooks.starting({ workspace: ws.dir, sandbox: sandboxed.description })) || this.#stopReason)
      return this.#stopped(null);
    this.#emitPrelude();
    this.#emit([
      {
        type: 'status',
        data: {
          message: `The agent runs ${sandboxed.description}`,
          sandbox,
          ...(sandboxed.limits ? { limits: sandboxed.limits } : {}),
        },
      },
    ]);

    // a follow-up to a run its earlier executions already took past a budget ends at once
    this.#checkUsageBudgets();
    const parser = adapter.parser();
    let lastResult: AgentEvent | undefined;
    const stderrTail: string[] = [];
    let stderrEvents = 0;
    let stderrDropped = 0;
    const inSandbox =
      sandboxed.workspaceBytes === undefined
        ? undefined
        : new SandboxWorkspace(ws.dir, sandboxed.workspaceBytes, () =>
            this.#passLimit(this.#workspaceFull(), 'workspace_too_large'),
          );
    this.#inSandbox = inSandbox;
    const onEvents = (reported: AgentEvent[]): void => {
      const events = withArtifactContent(reported, inSandbox ? inSandbox.view() : ws.dir);
      this.#emit(events);
      for (const e of events) {
        if (e.type === 'result') lastResult = e;
        if (adapter.isTurnEnd?.(e)) {
          this.#turnsDone += adapter.promptsAnswered?.(e) ?? 1;
          // every prompt handed over has had its turn: nothing more to say, so the CLI may finish
          if (this.#turnsDone >= 1 + this.#deliveredLive) this.#process?.closeStdin();
        }
      }
    };
    const proc = await AgentProcess.start({
      command: sandboxed.command,
      args: sandboxed.args,
      cwd: ws.dir,
      env: { ...env, ...sandboxed.env },
      launcher: sandbox === 'bubblewrap',
      control: inSandbox !== undefined,
      ...(invocation.input !== undefined ? { input: invocation.input } : {}),
      keepStdinOpen: invocation.keepStdinOpen,
      onOutput: (bytes) => this.#countOutput(bytes),
      onStdoutLine: (line) => {
        if (!this.#overLimit) onEvents(parser.line(line));
      },
      onStderrLine: (line) => {
        if (this.#overLimit || !line.trim()) return;
        stderrTail.push(line);
        if (stderrTail.length > 20) stderrTail.shift();
        if (stderrEvents < MAX_STDERR_EVENTS) {
          stderrEvents += 1;
          this.#emit([{ type: 'log', data: { stream: 'stderr', text: line } }]);
        } else stderrDropped += 1;
      },
    });
    this.#process = proc;
    inSandbox?.attach(proc.pid, proc.control);
    if (this.#stopReason) void this.#stopProcess();

    let sizeTimer: NodeJS.Timeout | undefined;
    let measuring = !inSandbox;
    const measure = (): void => {
      const began = Date.now();
      void workspaceUsage(ws.dir, this.#limits.workspaceBytes, proc.pid).then((bytes) => {
        if (bytes > this.#limits.workspaceBytes) {
          this.#passLimit(
            `the workspace grew past ${sizeText(this.#limits.workspaceBytes)} (the execution's workspace limit; files deleted but still open count)`,
            'workspace_too_large',
          );
          return;
        }
        if (!measuring) return;
        const next = Math.min(SIZE_CHECK_MAX_MS, Math.max(SIZE_CHECK_MIN_MS, 10 * (Date.now() - began)));
        sizeTimer = setTimeout(measure, Math.min(next, this.#settings.heartbeatMs * 5));
        sizeTimer.unref();
      });
    };
    if (measuring) {
      sizeTimer = setTimeout(measure, Math.min(SIZE_CHECK_MIN_MS, this.#settings.heartbeatMs * 5));
      sizeTimer.unref();
    }
    const deadline = this.#watchDeadline();
    const exit = await proc.exited;
    measuring = false;
    clearTimeout(sizeTimer);
    clearTimeout(deadline);
    if (inSandbox) {
      await inSandbox.settled;
      const report = inSandbox.report();
      // said even past a limit: what the host's workspace holds now
      if (report) this.#hooks.events([{ type: 'error', data: report }]);
    }
    onEvents(parser.end());
    if (stderrDropped)
      this.#emit([{ type: 'log', data: { stream: 'stderr', text: `[${stderrDropped} more stderr lines not kept]` } }]);

    if (exit.spawnError) {
      const code = exit.spawnError.code;
      const message =
        code === 'ENOENT' && sandbox === 'none'
          ? this.#notFound(invocation)
          : `the ${assignment.harness} harness could not be started: ${exit.spawnError.message}`;
      return this.#outcome('error', null, message, 'harness_unavailable');
    }
    if (this.#stopReason || this.#stopError) return this.#stopped(exit.code);
    const { code: exitCode, signal } = sandbox === 'bubblewrap' ? launcherExit(exit.code, exit.signal) : exit;
    if (inSandbox?.result.copyInFailed)
      return this.#outcome(
        'failed',
        exitCode,
        `the workspace (what earlier executions left and the run's files) does not fit its limit of ${sizeText(this.#limits.workspaceBytes)} (the execution's workspace limit): the agent was not started`,
        'workspace_too_large',
      );
    const reading = adapter.readExit(exitCode, signal, lastResult);
    // a workspace found full ended the agent above (a limit's stop); one filled as the agent ended is the
    // limit's doing too, whatever the agent said
    if (inSandbox?.result.full) return this.#outcome('failed', exitCode, this.#workspaceFull(), 'workspace_too_large');
    // a write stopped at the largest file the sandbox allows (RLIMIT_FSIZE: the workspace limit) fails the agent
    // before a measurement sees it: its failure is the limit's
    if (
      !inSandbox &&
      reading.kind !== 'succeeded' &&
      (await workspaceSize(ws.dir, this.#limits.workspaceBytes)) >= this.#limits.workspaceBytes
    ) {
      return this.#outcome(
        'failed',
        exitCode,
        `the workspace reached ${sizeText(this.#limits.workspaceBytes)} (the execution's workspace limit): ${reading.message}`,
        'workspace_too_large',
      );
    }
    let message = reading.message;
    if (
      reading.kind !== 'succeeded' &&
      !(typeof lastResult?.data.text === 'string' && lastResult.data.text) &&
      stderrTail.length
    ) {
      message += ` (${stderrTail.at(-1)!.slice(0, 300)})`;
    }
    if (sandbox === 'none') message += ` [ran ${sandboxed.description}]`;
    return this.#outcome(reading.kind, exitCode, message, reading.errorCode);
  }

  /**
   * The run's wall-clock budget (`config.max_duration_seconds`), counted from the run's creation (a follow-up's
   * execution: from its own start). Past it the agent is stopped like at any limit: the run ends FAILED with
   * `budget_exceeded`, its output and workspace kept. The one place a budget ends a run.
   */
  #watchDeadline(): NodeJS.Timeout | undefined {
    const seconds = this.assignment.run.config.max_duration_seconds;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return undefined;
    const created = Date.parse(this.assignment.run.createdAt);
    const from = this.assignment.previousExecutionId || Number.isNaN(created) ? Date.now() : created;
    const timer = setTimeout(
      () =>
        this.#passLimit(
          `budget_exceeded: the run passed its wall-clock budget of ${seconds} s (max_duration_seconds)`,
          'max_duration_exceeded',
        ),
      Math.max(0, from + seconds * 1000 - Date.now()),
    );
    timer.unref();
    return timer;
  }

  #notFound(invocation: Invocation): string {
    const harness = this.assignment.harness;
    return `the ${harness} harness executable "${invocation.command}" was not found (set AGENTYARD_HARNESS_${harness.toUpperCase()}_BIN)`;
  }
}

/** bubblewrap exits 128+N when the agent died of signal N (as shells report it): read back as that signal. */
export function launcherExit(
  code: number | null,
  signal: NodeJS.Signals | null,
): { code: number | null; signal: NodeJS.Signals | null } {
  if (signal || code === null || code <= 128) return { code, signal };
  const name = Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0];
  return name ? { code: null, signal: name as NodeJS.Signals } : { code, signal };
}
