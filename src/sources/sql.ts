/** The sources domain's SQL: the managed factories' commit record (migration 0012), as functions. */
import type { FactoryFileInput } from '../definitions/load.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import { isUniqueViolation } from '../store/errors.ts';

/** One commit of a managed factory, with everything git needs to write it again under the same id. */
export interface ManagedCommit {
  seq: number;
  sha: string;
  parentSha: string | null;
  authorName: string;
  authorEmail: string;
  /** Seconds since the epoch. */
  authoredAt: number;
  committedAt: number;
  /** Exactly as committed (with its final newline). */
  message: string;
  files: FactoryFileInput[];
}

interface CommitRow {
  seq: number;
  sha: string;
  parent_sha: string | null;
  author_name: string;
  author_email: string;
  authored_at: string | number;
  committed_at: string | number;
  message: string;
}

/** The factory's commits after `afterSeq`, oldest first, without their files. */
export async function listManagedCommits(q: Queryable, factoryId: string, afterSeq: number): Promise<ManagedCommit[]> {
  const res = await q.query<CommitRow>(
    `SELECT seq, sha, parent_sha, author_name, author_email, authored_at, committed_at, message
       FROM managed_commits WHERE factory_id = $1 AND seq > $2 ORDER BY seq`,
    [factoryId, afterSeq],
  );
  return res.rows.map((r) => ({
    seq: r.seq,
    sha: r.sha,
    parentSha: r.parent_sha,
    authorName: r.author_name,
    authorEmail: r.author_email,
    authoredAt: Number(r.authored_at),
    committedAt: Number(r.committed_at),
    message: r.message,
    files: [],
  }));
}

/** The trees of the given commits, by seq. */
export async function managedCommitFiles(
  q: Queryable,
  factoryId: string,
  seqs: readonly number[],
): Promise<Map<number, FactoryFileInput[]>> {
  if (seqs.length === 0) return new Map();
  const res = await q.query<{ seq: number; files: FactoryFileInput[] }>(
    'SELECT seq, files FROM managed_commits WHERE factory_id = $1 AND seq = ANY($2::int4[])',
    [factoryId, [...seqs]],
  );
  return new Map(res.rows.map((r) => [r.seq, r.files]));
}

/** Records commits in one transaction; a seq another process took first fails the whole insert (see isCommitTaken). */
export async function insertManagedCommits(
  db: Db,
  factoryId: string,
  commits: readonly ManagedCommit[],
): Promise<void> {
  await db.transaction(async (tx) => {
    for (const c of commits) {
      await tx.query(
        `INSERT INTO managed_commits (factory_id, seq, sha, parent_sha, author_name, author_email, authored_at, committed_at, message, files)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)`,
        [
          factoryId,
          c.seq,
          c.sha,
          c.parentSha,
          c.authorName,
          c.authorEmail,
          c.authoredAt,
          c.committedAt,
          c.message,
          JSON.stringify(c.files),
        ],
      );
    }
  });
}

/** The insert lost to another process's commit of the same seq. */
export function isCommitTaken(err: unknown): boolean {
  return isUniqueViolation(err);
}

/** The id of the factory's newest recorded commit, or null when none is recorded. */
export async function managedHeadSha(q: Queryable, factoryId: string): Promise<string | null> {
  const res = await q.query<{ sha: string }>(
    'SELECT sha FROM managed_commits WHERE factory_id = $1 ORDER BY seq DESC LIMIT 1',
    [factoryId],
  );
  return res.rows[0]?.sha ?? null;
}
