import type { ExecutionOverrides } from '../definitions/model.ts';
import type { ApplyRow } from './apply/sql.ts';
import type { ApplyOutcome, FactoryRow } from './apply/model.ts';
import { sanitizeUrl } from '../sources/url.ts';
import { API_PREFIX } from '../kernel/api.ts';
import type { Static } from 'typebox';
import type { SourceSchema } from './schemas.ts';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function sourceView(source: FactoryRow['source']): Static<typeof SourceSchema> {
  return source.type === 'git' ? { ...source, url: sanitizeUrl(source.url) } : { ...source };
}

export function statusView(row: FactoryRow) {
  const terminalSource = row.source_error?.kind === 'terminal';
  const refused = row.state === 'failed' && (row.reason === 'ValidationFailed' || row.reason === 'DeletionBlocked');
  return {
    state: row.state,
    ready: row.state === 'applied' && row.source_error === null,
    stalled: terminalSource || refused,
    reason: row.reason,
    message: row.message,
    applied_revision: row.applied_revision,
    attempted_revision: row.attempted_revision,
    applied_at: iso(row.applied_at),
    attempted_at: iso(row.attempted_at),
    errors: row.errors,
    source_error: row.source_error,
    fetched_at: iso(row.fetched_at),
  };
}

export function pushHookUrl(publicUrl: string, factoryId: string): string {
  return `${publicUrl}${API_PREFIX}/factories/${factoryId}/sync/push`;
}

export function factoryView(row: FactoryRow, publicUrl: string) {
  return {
    id: row.id,
    name: row.name,
    team_id: row.team_id,
    source: sourceView(row.source),
    read_only: row.source.type !== 'managed',
    status: statusView(row),
    ...(row.source.type === 'git' && row.source.push_secret ? { push_hook_url: pushHookUrl(publicUrl, row.id) } : {}),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function applyView(row: ApplyRow) {
  return {
    id: row.id,
    revision: row.revision,
    result: row.result,
    reason: row.reason,
    message: row.message,
    trigger: row.trigger,
    commit: {
      sha: row.commit_sha,
      author: row.commit_author,
      message: row.commit_message,
      time: iso(row.committed_at),
    },
    errors: row.errors,
    warnings: row.warnings,
    changes: row.changes,
    started_at: row.started_at.toISOString(),
    finished_at: row.finished_at.toISOString(),
  };
}

export function outcomeView(outcome: ApplyOutcome, status?: ReturnType<typeof statusView>) {
  return {
    result: outcome.result,
    revision: outcome.revision,
    reason: outcome.reason,
    message: outcome.message,
    apply_id: outcome.applyId,
    errors: outcome.errors,
    warnings: outcome.warnings,
    changes: outcome.changes,
    ...(status ? { status } : {}),
  };
}

function harnessOf(
  defaults: ExecutionOverrides,
): { type: string; model_id: string | null; reasoning_level: string | null } | null {
  if (typeof defaults.model === 'string') return { type: 'oz', model_id: defaults.model, reasoning_level: null };
  const h = defaults.harness;
  if (!h?.type) return null;
  return {
    type: h.type === ('claude-code' as string) ? 'claude' : h.type,
    model_id: h.model ?? null,
    reasoning_level: h.reasoningLevel ?? null,
  };
}

/** The Factory object of the product's public factory API (`GET /factory/{uid}`). */
export function referenceFactoryView(row: FactoryRow) {
  const def = row.definition;
  const settings = def?.factory;
  const defaults = settings?.agentDefaults ?? {};
  const harness = harnessOf(defaults);
  const auth = defaults.harness?.auth;
  const hasRepos = (settings?.repositories.length ?? 0) > 0;
  return {
    uid: row.id,
    name: settings?.name ?? row.name,
    alias: settings?.alias ?? null,
    description: settings?.description ?? null,
    team_uid: row.team_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    creator: null,
    avatar_url: null,
    code_forge: hasRepos ? 'GITHUB' : 'NONE',
    code_forges: hasRepos ? ['GITHUB'] : [],
    credential_strategy: settings?.credentialStrategy ?? 'EXECUTOR',
    default_environment: defaults.environmentId ?? null,
    default_model: harness?.model_id ?? null,
    integrations: settings?.integrations ?? null,
    repositories: (settings?.repositories ?? []).map((r) => ({ owner: r.owner, repo: r.name, code_forge: 'GITHUB' })),
    scoring: { default_model: null },
    agent_defaults: {
      default_runner_uid: defaults.runner ?? null,
      worker_host: defaults.workerHost ?? null,
      secrets: [...new Set([...(defaults.secrets ?? []), ...(settings?.secrets ?? [])])].map((name) => ({ name })),
      mcp_servers: Object.fromEntries(
        Object.entries({ ...(settings?.mcpServers ?? {}), ...(defaults.mcpServers ?? {}) }).map(([n, s]) => [
          n,
          { warp_id: s.warpId },
        ]),
      ),
      harness,
      harness_auth_secrets:
        auth?.source === 'managedSecret' && harness ? { [`${harness.type}_auth_secret_name`]: auth.secretName } : null,
    },
  };
}
