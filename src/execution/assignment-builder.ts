/**
 * Builds the assignment of a claimed execution from the database: what the agent is told (the run's prompt, or the
 * follow-ups that continue it), the skill, the attachments, the provider key from the team's managed secret,
 * and the agent session to resume.
 */
import { actsAsCreator, CreatorUnknown, creatorRunEnv } from '../integrations/creator-env.ts';
import { githubRunEnv } from '../integrations/github-token.ts';
import type { AgentConfig, RunRow } from '../engine/model.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Queryable } from '../kernel/db.ts';
import { adapterFor } from './harnesses/index.ts';
import type { Assignment, AssignmentFollowup } from './assignment.ts';
import { SECRET_ENV_OF } from './assignment.ts';
import type { HarnessType } from './settings.ts';
import { resolveSkill } from './skills.ts';
import { issueRunTokens } from './run-token.ts';
import * as sql from './sql.ts';
import { usageBefore } from './usage-budget.ts';
import type { ClaimInputs } from '../engine/engine.ts';

/** An assignment cannot be made for a reason that is the run's own (its configuration names a missing secret...). */
export class AssignmentError extends Error {
  readonly errorCode: string;
  constructor(errorCode: string, message: string) {
    super(message);
    this.errorCode = errorCode;
  }
}

/** Model ids of the Oz catalogue (`auto`, `auto-genius`...) leave the choice to the CLI. */
function harnessModel(config: AgentConfig): string | undefined {
  const model = config.harness?.model_id ?? config.model_id;
  if (!model || /^auto(-|$)/.test(model)) return undefined;
  return model;
}

/** The managed secret holding the harness's provider key: `harness_auth_secrets.<type>_auth_secret_name`. */
export function authSecretName(config: AgentConfig, harness: HarnessType): string | undefined {
  const secrets = (config.harness_auth_secrets ?? {}) as Record<string, string | undefined>;
  return secrets[`${harness}_auth_secret_name`] || undefined;
}

/** What an assignment reads from the database (the claim reads it too). */
export type AssignmentInputs = ClaimInputs;

function followupText(followups: readonly AssignmentFollowup[]): string {
  return followups.map((f) => f.message).join('\n\n');
}

/** What assignments need from the database, for several claimed runs in one query. */
async function loadInputs(
  q: Queryable,
  claims: readonly { runId: string; executionId: string }[],
): Promise<Map<string, AssignmentInputs>> {
  const res = await sql.assignmentInputs(q, claims);
  return new Map(res.rows.map((r) => [r.run_id, r]));
}

export interface AssignmentRequest {
  run: RunRow;
  executionId: string;
  attempt: number;
  harness: HarnessType;
  /** Read by the claim already; loaded here when absent. */
  inputs?: AssignmentInputs;
}

/** Assignments for several claimed executions; a run whose assignment cannot be made gets its AssignmentError (or other error). */
export async function buildAssignments(
  q: Queryable,
  secrets: SecretProvider,
  requests: readonly AssignmentRequest[],
  sessionLink: (sessionId: string) => string,
  factoryMcpUrl?: () => string,
): Promise<(Assignment | Error)[]> {
  if (requests.length === 0) return [];
  const missing = requests.filter((r) => !r.inputs);
  const loaded = missing.length
    ? await loadInputs(
        q,
        missing.map((r) => ({ runId: r.run.id, executionId: r.executionId })),
      )
    : new Map<string, AssignmentInputs>();
  const built = await Promise.all(
    requests.map((r) =>
      assignmentFrom(q, secrets, r, r.inputs ?? loaded.get(r.run.id)!, sessionLink).catch((err: unknown) =>
        err instanceof Error ? err : new Error(String(err)),
      ),
    ),
  );
  if (factoryMcpUrl) await addFactoryMcp(q, built, factoryMcpUrl());
  return built;
}

/** A run token for each execution that runs an agent (the noop harness runs none), issued in one statement. */
async function addFactoryMcp(q: Queryable, assignments: (Assignment | Error)[], url: string): Promise<void> {
  const agents = assignments.filter((a): a is Assignment => !(a instanceof Error) && a.harness !== 'noop');
  if (agents.length === 0) return;
  const tokens = await issueRunTokens(
    q,
    agents.map((a) => ({ executionId: a.executionId, runId: a.runId, teamId: a.teamId })),
  );
  for (const a of agents) a.factoryMcp = { url, token: tokens.get(a.executionId)! };
}

export async function buildAssignment(
  q: Queryable,
  secrets: SecretProvider,
  input: AssignmentRequest & { sessionLink: (sessionId: string) => string; factoryMcpUrl?: () => string },
): Promise<Assignment> {
  const [assignment] = await buildAssignments(q, secrets, [input], input.sessionLink, input.factoryMcpUrl);
  if (assignment instanceof Error) throw assignment;
  return assignment!;
}

/** The value of a read issued with the others, or its error thrown. */
function settled<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

async function assignmentFrom(
  q: Queryable,
  secrets: SecretProvider,
  input: AssignmentRequest,
  inputs: AssignmentInputs,
  sessionLink: (sessionId: string) => string,
): Promise<Assignment> {
  const { run, harness } = input;
  const config = run.config;
  const previous = inputs.previous;
  const ranBefore = previous.find((e) => e.started);
  const lastSession = previous.find((e) => e.agent_session_id)?.agent_session_id ?? undefined;
  const followups = inputs.followups;
  const adapter = adapterFor(harness);
  const resumeSessionId = ranBefore && lastSession && (adapter?.resumes ?? false) ? lastSession : undefined;

  const continuesWithoutSession = ranBefore !== undefined && resumeSessionId === undefined;
  const secretName = authSecretName(config, harness);
  // The reads an assignment may need are independent: issued together, not one after another (each is a round trip,
  // and a start waits for the assignment). Their failures are reported in the order the reads used to be made.
  // (an assignment that needs no read is built without waiting: the run starts in the turn it was claimed)
  const nothing: PromiseSettledResult<undefined> = { status: 'fulfilled', value: undefined };
  const [lastResultRead, secretRead, skillRead] =
    continuesWithoutSession || secretName || run.skill_spec
      ? await Promise.allSettled([
          continuesWithoutSession ? sql.lastResultEvent(q, run.id) : undefined,
          secretName ? secrets.get(run.team_id, secretName) : undefined,
          run.skill_spec ? resolveSkill(q, run, run.skill_spec) : undefined,
        ])
      : [nothing, nothing, nothing];

  let prompt: string;
  if (!ranBefore) {
    prompt = run.prompt;
    if (followups.length) prompt += `\n\nFollow-up from the user:\n\n${followupText(followups)}`;
  } else if (resumeSessionId) {
    prompt = followups.length ? followupText(followups) : 'Continue.';
  } else {
    // No session to resume: tell the agent what the conversation was.
    const lastResult = settled(lastResultRead)?.rows[0]?.data.text;
    prompt = [
      'This continues an earlier session of this run. The original task was:',
      run.prompt,
      ...(lastResult ? ['Your last answer was:', lastResult] : []),
      'Follow-up from the user:',
      followups.length ? followupText(followups) : 'Continue.',
    ].join('\n\n');
  }

  const secretEnv: Record<string, string> = {};
  if (secretName) {
    const value = settled(secretRead);
    if (value === undefined) {
      throw new AssignmentError(
        'secret_not_found',
        `the harness auth secret "${secretName}" does not exist in the team (PUT /api/v1/secrets/${secretName})`,
      );
    }
    for (const name of SECRET_ENV_OF[harness]) secretEnv[name] = value.trim();
  }

  if (actsAsCreator(run)) {
    // The member who caused the event lends their own tokens; the connection's identity is not used.
    try {
      Object.assign(secretEnv, await creatorRunEnv(q, secrets, run));
    } catch (err) {
      if (err instanceof CreatorUnknown) throw new AssignmentError('environment_setup_failed', err.message);
      throw err;
    }
  } else if (run.source === 'GITHUB_ACTION') {
    // (a connection's Slack or Linear token only when the run's secrets ask for it: runner-settings.ts)
    await addGithubToken(q, secrets, run, secretEnv);
  }

  const attachments = inputs.attachments.map((a) => ({
    fileName: a.file_name,
    mimeType: a.mime_type,
    base64: a.data.replace(/\s+/g, ''),
  }));
  const skill = settled(skillRead);
  const before = usageBefore(run.request_usage);
  return {
    executionId: input.executionId,
    runId: run.id,
    teamId: run.team_id,
    attempt: input.attempt,
    harness,
    title: run.title,
    prompt,
    runPrompt: run.prompt,
    basePrompt: config.base_prompt || undefined,
    modelId: harnessModel(config),
    reasoningLevel: config.harness?.reasoning_level || undefined,
    mcpServers: config.mcp_servers ?? {},
    skill,
    attachments,
    secretEnv,
    authSource: secretName ? 'managedSecret' : run.worker_host ? 'workerEnvironment' : 'none',
    resumeSessionId,
    previousExecutionId: ranBefore?.id,
    followups,
    run: {
      source: run.source,
      config: config as Record<string, unknown>,
      metadata: run.metadata,
      createdAt: run.created_at.toISOString(),
      sessionLink: sessionLink(run.session_id),
      ...(before ? { usage: before } : {}),
    },
  };
}

/** An App installation token for the event's repository (never argv; redacted from events). */
async function addGithubToken(
  q: Queryable,
  secrets: SecretProvider,
  run: RunRow,
  secretEnv: Record<string, string>,
): Promise<void> {
  try {
    Object.assign(secretEnv, await githubRunEnv(q, secrets, run));
  } catch (err) {
    throw new AssignmentError(
      'environment_setup_failed',
      `could not get a GitHub installation token for ${run.metadata.repository ?? 'the repository'}: ${(err as Error).message}`,
    );
  }
}
