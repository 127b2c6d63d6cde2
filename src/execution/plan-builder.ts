/**
 * Builds the plan of a claimed execution from the database: what the agent is told (the run's prompt, or the
 * follow-ups that continue it), the skill, the attachments, the provider key from the team's managed secret,
 * and the agent session to resume.
 */
import type { AgentConfig, RunRow } from '../runs/model.ts';
import { listAttachments } from '../runs/plans.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Queryable } from '../store/db.ts';
import { adapterFor } from './harnesses/index.ts';
import type { ExecutionPlan, PlanFollowup } from './plan.ts';
import { SECRET_ENV_OF } from './plan.ts';
import type { HarnessType } from './settings.ts';
import { resolveSkill } from './skills.ts';

/** A plan cannot be made for a reason that is the run's own (its configuration names a missing secret...). */
export class PlanError extends Error {
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

interface PreviousExecution {
  id: string;
  agent_session_id: string | null;
  started_at: Date | null;
}

function followupText(followups: readonly PlanFollowup[]): string {
  return followups.map((f) => f.message).join('\n\n');
}

export async function buildPlan(
  q: Queryable,
  secrets: SecretProvider,
  input: { run: RunRow; executionId: string; attempt: number; harness: HarnessType; publicUrl: string },
): Promise<ExecutionPlan> {
  const { run, harness } = input;
  const config = run.config;
  const previous = (
    await q.query<PreviousExecution>(
      `SELECT id, agent_session_id, started_at FROM executions WHERE run_id = $1 AND id <> $2 ORDER BY attempt DESC LIMIT 5`,
      [run.id, input.executionId],
    )
  ).rows;
  const ranBefore = previous.find((e) => e.started_at !== null);
  const lastSession = previous.find((e) => e.agent_session_id)?.agent_session_id ?? undefined;
  const followups = (
    await q.query<PlanFollowup>(
      'SELECT id, message FROM run_followups WHERE run_id = $1 AND consumed_by_execution IS NULL ORDER BY created_at, id',
      [run.id],
    )
  ).rows;
  const adapter = adapterFor(harness);
  const resumeSessionId = ranBefore && lastSession && (adapter?.resumes ?? false) ? lastSession : undefined;

  let prompt: string;
  if (!ranBefore) {
    prompt = run.prompt;
    if (followups.length) prompt += `\n\nFollow-up from the user:\n\n${followupText(followups)}`;
  } else if (resumeSessionId) {
    prompt = followups.length ? followupText(followups) : 'Continue.';
  } else {
    // No session to resume: tell the agent what the conversation was.
    const lastResult = (
      await q.query<{ data: { text?: string } }>(
        `SELECT data FROM run_events WHERE run_id = $1 AND type = 'result' ORDER BY sequence DESC LIMIT 1`,
        [run.id],
      )
    ).rows[0]?.data.text;
    prompt = [
      'This continues an earlier session of this run. The original task was:',
      run.prompt,
      ...(lastResult ? ['Your last answer was:', lastResult] : []),
      'Follow-up from the user:',
      followups.length ? followupText(followups) : 'Continue.',
    ].join('\n\n');
  }

  const secretName = authSecretName(config, harness);
  const secretEnv: Record<string, string> = {};
  if (secretName) {
    const value = await secrets.get(run.team_id, secretName);
    if (value === undefined) {
      throw new PlanError('secret_not_found', `the harness auth secret "${secretName}" does not exist in the team (PUT /api/v1/secrets/${secretName})`);
    }
    for (const name of SECRET_ENV_OF[harness]) secretEnv[name] = value.trim();
  }

  const attachments = (await listAttachments(q, run.id)).map((a) => ({ fileName: a.file_name, mimeType: a.mime_type, base64: a.data.toString('base64') }));
  const skill = run.skill_spec ? await resolveSkill(q, run, run.skill_spec) : undefined;
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
      sessionLink: `${input.publicUrl}/sessions/${run.session_id}`,
    },
  };
}
