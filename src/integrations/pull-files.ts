/**
 * The changed files of a pull request, for `paths` filters on pull_request events (GitHub's payload does not
 * list them): `pulls.listFiles` through octokit with the App installation's token, paginated up to GitHub's
 * own limit of 3,000 files. The delivery waits off the outbox meanwhile and returns to it when the job ends,
 * with the files, or with none (then `paths` filters do not match, and the connection shows why).
 */
import type { Bus } from '../kernel/bus.ts';
import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { installationClient, retryAdvice } from './github-client.ts';
import { returnsDelivery } from './integration-jobs.ts';
import type { GithubPullRequestInput, IntegrationJob, JobHandler } from './integration-jobs.ts';
import { recordLastError } from './sql.ts';

/** GitHub's `pulls.listFiles` answers at most 3,000 files; pages of 100 make that 30 calls at most. */
export const PULL_FILES_CAP = 3_000;
const PAGE_SIZE = 100;

export interface PullFiles {
  files: string[];
  /** The pull request changes more files than were fetched: `paths` matched on the fetched ones. */
  truncated: boolean;
}

export function pullFilesHandler(deps: {
  db: Queryable;
  bus: Bus;
  secrets: SecretProvider;
}): JobHandler<GithubPullRequestInput> {
  return {
    async run(job, { final }) {
      let client: Awaited<ReturnType<typeof installationClient>>;
      try {
        client = await installationClient(deps.db, deps.secrets, job);
      } catch (err) {
        const advice = retryAdvice(err);
        return advice.retry
          ? { retry: advice.message, ...(advice.afterMs ? { afterMs: advice.afterMs } : {}) }
          : failed(deps.db, job, advice.message);
      }
      if (!client.ok) return failed(deps.db, job, client.reason);
      const [owner, repo] = job.input.repository.split('/') as [string, string];
      const files = new Set<string>();
      let truncated = false;
      try {
        for await (const page of client.octokit.paginate.iterator(client.octokit.rest.pulls.listFiles, {
          owner,
          repo,
          pull_number: job.input.pull_number,
          per_page: PAGE_SIZE,
        })) {
          for (const file of page.data) {
            files.add(file.filename);
            if (file.previous_filename) files.add(file.previous_filename);
          }
          if (files.size >= PULL_FILES_CAP) {
            truncated = page.data.length === PAGE_SIZE;
            break;
          }
        }
      } catch (err) {
        const advice = retryAdvice(err);
        if (advice.retry && !final)
          return { retry: advice.message, ...(advice.afterMs ? { afterMs: advice.afterMs } : {}) };
        return failed(deps.db, job, advice.message);
      }
      return { done: { files: [...files], truncated } satisfies PullFiles as unknown as Record<string, unknown> };
    },
    // Back to the outbox: the evaluation reads the files from this job.
    ...returnsDelivery(deps.bus),
  };
}

async function failed(db: Queryable, job: IntegrationJob<GithubPullRequestInput>, reason: string) {
  const message = `changed files of ${job.input.repository}#${job.input.pull_number} (delivery ${job.delivery_id}) not fetched: ${reason}; its paths filters do not match`;
  await recordLastError(db, job.connection_id, message);
  return { failed: message, result: { files: [], truncated: false } };
}
