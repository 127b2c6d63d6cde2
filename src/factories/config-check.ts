/**
 * The `agentyard/factory-config` check run on a pull request to a git factory's production branch: created
 * in progress through octokit, then completed with the plan of the PR head against the live state (never
 * applied: merging still applies only through the production branch). Runs as a durable integration job; the
 * check run's id is kept with the job, so a retry completes the same check run.
 */
import type { Octokit } from 'octokit';
import type { Queryable } from '../kernel/db.ts';
import { installationClient, retryAdvice } from '../integrations/github-client.ts';
import type {
  GithubPullRequestInput,
  IntegrationJob,
  JobHandler,
  JobOutcome,
} from '../integrations/integration-jobs.ts';
import type { Reconciler } from './apply/reconciler.ts';
import * as sql from './apply/sql.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { GitSource } from '../sources/git.ts';
import { isSourceError } from '../sources/types.ts';
import { ANNOTATIONS_PER_REQUEST, CHECK_NAME, planReport, problemReport } from './check-report.ts';
import type { CheckReport } from './check-report.ts';

/** A branch name as git allows it, and nothing a refspec could misread. */
const SAFE_REF = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*\.lock$)[A-Za-z0-9._/-]{1,200}$/;

export interface FactoryCheckDeps {
  db: Queryable;
  secrets: SecretProvider;
  reconciler: Reconciler;
}

/** Thrown for a failure worth retrying (a transient fetch); on the last attempt it becomes the report. */
class Transient extends Error {}

export function factoryCheckHandler(deps: FactoryCheckDeps): JobHandler<GithubPullRequestInput> {
  return {
    async run(job, { final, save }) {
      let client: Awaited<ReturnType<typeof installationClient>>;
      try {
        client = await installationClient(deps.db, deps.secrets, job);
      } catch (err) {
        return giveUpOrRetry(err, final);
      }
      if (!client.ok) return { failed: `the factory check cannot be reported: ${client.reason}` };
      const { octokit } = client;
      const [owner, repo] = job.input.repository.split('/') as [string, string];
      try {
        let checkRunId = typeof job.result.check_run_id === 'number' ? job.result.check_run_id : undefined;
        if (checkRunId === undefined) {
          const created = await octokit.rest.checks.create({
            owner,
            repo,
            name: CHECK_NAME,
            head_sha: job.input.head_sha,
            status: 'in_progress',
            started_at: new Date().toISOString(),
            external_id: job.id,
            output: { title: 'Checking the factory definition', summary: 'Reading the pull request head…' },
          });
          checkRunId = created.data.id;
          await save({ check_run_id: checkRunId });
        }
        let report: CheckReport;
        try {
          report = await reportFor(deps, job);
        } catch (err) {
          if (!(err instanceof Transient) || !final) throw err;
          report = problemReport('failure', 'The pull request head could not be read', err.message);
        }
        await sendReport(octokit, { owner, repo, checkRunId }, report, job, save);
        return { done: { conclusion: report.conclusion } };
      } catch (err) {
        return giveUpOrRetry(err, final);
      }
    },
  };
}

function giveUpOrRetry(err: unknown, final: boolean): JobOutcome {
  if (err instanceof Transient) return final ? { failed: err.message } : { retry: err.message };
  const advice = retryAdvice(err);
  if (advice.retry && !final) return { retry: advice.message, ...(advice.afterMs ? { afterMs: advice.afterMs } : {}) };
  return { failed: `the factory check could not be reported: ${advice.message}` };
}

/** Reads the head at its sha from the factory's git source and plans it against the live state. */
async function reportFor(deps: FactoryCheckDeps, job: IntegrationJob<GithubPullRequestInput>): Promise<CheckReport> {
  const factory = await sql.getFactory(deps.db, job.factory_id);
  if (factory?.source.type !== 'git')
    return problemReport(
      'neutral',
      'The factory is gone',
      'The factory this check was for was deleted or is no longer a git factory.',
    );
  const source = deps.reconciler.sourceFor(factory);
  if (!(source instanceof GitSource))
    return problemReport('neutral', 'Not a git factory', 'The factory is no longer read from a git repository.');
  const refs = [`refs/pull/${job.input.pull_number}/head`];
  if (SAFE_REF.test(job.input.head_ref)) refs.push(`refs/heads/${job.input.head_ref}`);
  let snapshot;
  try {
    snapshot = await source.fetchCommit(job.input.head_sha, refs);
  } catch (err) {
    if (isSourceError(err) && err.kind === 'terminal')
      return problemReport('failure', 'The pull request head could not be read', err.message);
    throw new Transient(err instanceof Error ? err.message : String(err));
  }
  const common = {
    factoryName: factory.name,
    sourcePath: factory.source.path,
    appliedRevision: factory.applied_revision,
    headSha: job.input.head_sha,
  };
  if (snapshot.refused && snapshot.refused.length > 0) return planReport({ ...common, diagnostics: snapshot.refused });
  const prepared = await deps.reconciler.prepare(factory, snapshot.files, { forApply: false, refreshSecrets: true });
  return planReport({
    ...common,
    diagnostics: prepared.validation.diagnostics,
    ...(prepared.plan ? { changes: prepared.plan.changes, warnings: prepared.plan.warnings } : {}),
  });
}

/**
 * Completes the check run: annotations 50 per request (GitHub's limit), the last request completing it. How
 * many were sent is kept with the job, so that a retry does not send them twice.
 */
async function sendReport(
  octokit: Octokit,
  at: { owner: string; repo: string; checkRunId: number },
  report: CheckReport,
  job: IntegrationJob<GithubPullRequestInput>,
  save: (result: Record<string, unknown>) => Promise<void>,
): Promise<void> {
  const sent = typeof job.result.annotations_sent === 'number' ? job.result.annotations_sent : 0;
  const output = { title: report.title, summary: report.summary };
  let offset = sent;
  while (report.annotations.length - offset > ANNOTATIONS_PER_REQUEST) {
    const chunk = report.annotations.slice(offset, offset + ANNOTATIONS_PER_REQUEST);
    await octokit.rest.checks.update({
      owner: at.owner,
      repo: at.repo,
      check_run_id: at.checkRunId,
      output: { ...output, annotations: chunk },
    });
    offset += chunk.length;
    await save({ annotations_sent: offset });
  }
  await octokit.rest.checks.update({
    owner: at.owner,
    repo: at.repo,
    check_run_id: at.checkRunId,
    status: 'completed',
    conclusion: report.conclusion,
    completed_at: new Date().toISOString(),
    output: { ...output, annotations: report.annotations.slice(offset) },
  });
}
