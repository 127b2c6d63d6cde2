/**
 * The integration jobs a GitHub `pull_request` delivery asks for, decided in the outbox evaluation's transaction: its
 * changed files (when a candidate trigger filters on `paths`) and, when it is opened, pushed to or reopened
 * against a git factory's production branch through a GitHub App connection, or retargeted to it (`edited`
 * with a new base), that factory's check run.
 */
import type { Queryable } from '../kernel/db.ts';
import { githubRepositoryOf } from '../sources/github-repository.ts';
import { githubApiUrl } from './github-token.ts';
import type { GithubPullRequestInput } from './integration-jobs.ts';
import { connectionMode, deliveryJob, enqueueIntegrationJob, gitFactoriesOnBranch } from './sql.ts';

/** The actions that put a new head before the factory check. */
const CHECKED_ACTIONS = new Set(['opened', 'synchronize', 'reopened']);

export interface PullRequestFacts {
  action: string;
  base_ref: string;
  /** `edited` only: the delivery changed the base branch (`changes.base`). */
  base_changed: boolean;
  input: GithubPullRequestInput;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** What a `pull_request` payload says about the pull request; undefined when a needed member is missing. */
export function pullRequestFacts(payload: unknown): PullRequestFacts | undefined {
  const p = obj(payload);
  const pr = obj(p?.pull_request);
  const action = str(p?.action);
  const repository = str(obj(p?.repository)?.full_name);
  const number = pr?.number;
  const headSha = str(obj(pr?.head)?.sha);
  const baseRef = str(obj(pr?.base)?.ref);
  if (!action || !repository || typeof number !== 'number' || !Number.isSafeInteger(number) || !headSha || !baseRef)
    return undefined;
  if (!/^[0-9a-f]{40}$/.test(headSha) || !/^[^/\s]+\/[^/\s]+$/.test(repository)) return undefined;
  const installation = obj(p?.installation)?.id;
  return {
    action,
    base_ref: baseRef,
    base_changed: action === 'edited' && obj(obj(p?.changes)?.base) !== undefined,
    input: {
      repository,
      pull_number: number,
      head_sha: headSha,
      head_ref: str(obj(pr?.head)?.ref) ?? '',
      installation_id: typeof installation === 'number' && Number.isSafeInteger(installation) ? installation : null,
    },
  };
}

interface DeliveryRef {
  id: string;
  team_id: string;
  /** The connection's id. */
  webhook_uid: string;
}

/** One `factory_check` job per git factory of the team whose production branch the pull request targets. */
export async function enqueueFactoryChecks(
  tx: Queryable,
  delivery: DeliveryRef,
  pr: PullRequestFacts,
): Promise<number> {
  if (!CHECKED_ACTIONS.has(pr.action) && !pr.base_changed) return 0;
  if ((await connectionMode(tx, delivery.webhook_uid)) !== 'app') return 0;
  const factories = await gitFactoriesOnBranch(tx, delivery.team_id, pr.base_ref);
  const apiUrl = githubApiUrl();
  const repository = pr.input.repository.toLowerCase();
  let queued = 0;
  for (const factory of factories) {
    if (githubRepositoryOf(factory.source, apiUrl)?.toLowerCase() !== repository) continue;
    const added = await enqueueIntegrationJob(tx, {
      kind: 'factory_check',
      team_id: delivery.team_id,
      connection_id: delivery.webhook_uid,
      delivery_id: delivery.id,
      factory_id: factory.id,
      input: pr.input,
    });
    if (added) queued++;
  }
  return queued;
}

export type ChangedFiles =
  /** `error`: why there are none, for the connection's `last_error` (the caller records it after its commit). */
  | { files: readonly string[]; error?: string }
  /** A job fetches them; the delivery is evaluated again when it ends. */
  | { waiting: true; queued: boolean };

/**
 * The pull request's changed files for `paths` filters: fetched by a job (App connections), whose result a
 * later evaluation reads; none for a plain-webhook connection, which has no token (with the error to record).
 */
export async function changedFiles(tx: Queryable, delivery: DeliveryRef, pr: PullRequestFacts): Promise<ChangedFiles> {
  const job = await deliveryJob(tx, delivery.id, 'pull_files');
  if (job?.state === 'pending') return { waiting: true, queued: false };
  if (job) {
    const files = job.result.files;
    return { files: Array.isArray(files) ? files.filter((f): f is string => typeof f === 'string') : [] };
  }
  if ((await connectionMode(tx, delivery.webhook_uid)) !== 'app') {
    return {
      files: [],
      error: `delivery ${delivery.id}: paths filters on pull_request events need a GitHub App connection (a plain webhook cannot list a pull request's files); they did not match`,
    };
  }
  await enqueueIntegrationJob(tx, {
    kind: 'pull_files',
    team_id: delivery.team_id,
    connection_id: delivery.webhook_uid,
    delivery_id: delivery.id,
    factory_id: '',
    input: pr.input,
  });
  return { waiting: true, queued: true };
}
