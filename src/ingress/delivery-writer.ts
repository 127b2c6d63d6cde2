import type { Logger } from '../kernel/log.ts';
import type { Db } from '../kernel/db.ts';
import { GroupCommit } from '../kernel/group-commit.ts';
import { isUniqueViolation } from '../store/errors.ts';
import { GROUP_COMMIT_MAX_BATCH } from './limits.ts';
import {
  acceptDeliveries,
  acceptNewDeliveries,
  findAccepted,
  IDENTITY_INDEX,
  identityKey,
  insertLogged,
} from './sql.ts';
import type { AcceptGroup, AcceptInsert, AcceptResult, DeliveryInsert, DeliveryLabelCode } from './sql.ts';

export type AcceptOutcome =
  | { outcome: 'accepted'; id: string }
  | { outcome: 'duplicate'; id: string; duplicateOf: string | null }
  /** The webhook was disabled or deleted while the request was in flight. */
  | { outcome: 'gone' }
  /** The secret was rotated while the request was in flight: the credential it passed is no longer valid. */
  | { outcome: 'secret_changed'; id: string };

interface PendingAccept {
  kind: 'accept';
  row: AcceptInsert;
  secretVersion: number;
  resolve(outcome: AcceptOutcome): void;
  reject(err: unknown): void;
}

interface PendingLog {
  kind: 'log';
  row: DeliveryInsert;
  resolve(): void;
  reject(err: unknown): void;
}

type Pending = PendingAccept | PendingLog;

/** Groups accepted with `ON CONFLICT` after one that repeated an accepted delivery. */
const REPEAT_WINDOW_GROUPS = 100;

/**
 * Picks the accept statement for each group. Most groups repeat nothing and take the plain insert
 * (acceptNewDeliveries); a group that does fails it with a unique violation and is accepted again with
 * `ON CONFLICT` (acceptDeliveries), and so are the groups after it while repeats keep coming, so that a
 * sender's burst of retries does not cost every group a failed statement.
 */
export class AcceptForm {
  #conflictGroups = 0;

  /** Groups left to accept with `ON CONFLICT` (0: the plain insert first). */
  get conflictGroups(): number {
    return this.#conflictGroups;
  }

  async accept(db: Db, rows: AcceptGroup): Promise<AcceptResult> {
    if (this.#conflictGroups > 0) {
      this.#conflictGroups--;
      const result = await acceptDeliveries(db, rows);
      if (
        rows.some(
          ({ row, secretVersion }) =>
            !result.accepted.has(row.id) && result.live.get(row.webhookUid)?.secretVersion === secretVersion,
        )
      ) {
        this.#conflictGroups = REPEAT_WINDOW_GROUPS;
      }
      return result;
    }
    try {
      return await acceptNewDeliveries(db, rows);
    } catch (err) {
      if (!isUniqueViolation(err, IDENTITY_INDEX)) throw err;
      this.#conflictGroups = REPEAT_WINDOW_GROUPS - 1;
      return acceptDeliveries(db, rows);
    }
  }
}

export interface DeliveryWriterOptions {
  /**
   * Groups written at once; 1 by default (docs/decisions.md, "One batch in flight"): the next group is handed
   * over as soon as one is written, before its requests are answered. With more, a further group is handed over
   * while one is in flight only once a full group waits (docs/decisions.md, "A second group waits").
   */
  concurrency?: number;
  maxBatch?: number;
  /**
   * How many deliveries the server is handling now, from arrival to answer. A group then takes at most half of
   * them (docs/decisions.md, "A group takes half the deliveries in progress"): senders that wait for each answer
   * before sending again would otherwise move as one convoy, all in the database, then all on the HTTP thread,
   * each side idle while the other works. Without it, a group takes all that is queued, up to maxBatch.
   */
  inProgress?: () => number;
  /** Called after a commit that put at least one delivery in the outbox. */
  onQueued?: () => void;
  /** Called after each commit with the number of deliveries it logged under each label. */
  onLogged?: (label: DeliveryLabelCode, count: number) => void;
}

/**
 * Group commit for the delivery log. Requests hand their delivery over and wait; whatever has arrived by the
 * time a writer is free is written together, one statement for the accepts and one for the log rows, and
 * every waiter is answered only after the statement that wrote its delivery has committed.
 */
export class DeliveryWriter {
  readonly #db: Db;
  readonly #log: Logger;
  readonly #options: DeliveryWriterOptions;
  readonly #groups: GroupCommit<Pending>;
  readonly #form = new AcceptForm();

  constructor(db: Db, log: Logger, options: DeliveryWriterOptions = {}) {
    this.#db = db;
    this.#log = log;
    this.#options = options;
    const maxBatch = options.maxBatch ?? GROUP_COMMIT_MAX_BATCH;
    const { inProgress } = options;
    this.#groups = new GroupCommit<Pending>((batch, release) => this.#write(batch, release), {
      maxInFlight: options.concurrency ?? 1,
      overlap: 'full',
      maxGroup: inProgress ? () => Math.min(maxBatch, Math.max(1, Math.ceil(inProgress() / 2))) : maxBatch,
    });
  }

  accept(row: AcceptInsert, secretVersion: number): Promise<AcceptOutcome> {
    return new Promise((resolve, reject) => this.#groups.add({ kind: 'accept', row, secretVersion, resolve, reject }));
  }

  /** Logs a rejected delivery (metadata only). */
  log(row: DeliveryInsert): Promise<void> {
    return new Promise((resolve, reject) => this.#groups.add({ kind: 'log', row, resolve, reject }));
  }

  /** Resolves once everything handed over so far is written. */
  drain(): Promise<void> {
    return this.#groups.drain();
  }

  // The group's slot is released when its last statement has returned, before its requests are answered, so
  // that the next group is already with the database while this thread writes the responses.
  async #write(batch: Pending[], release: () => void): Promise<void> {
    const settled = new Set<Pending>();
    const settle = (item: Pending, outcome?: AcceptOutcome) => {
      settled.add(item);
      if (item.kind === 'accept') item.resolve(outcome!);
      else item.resolve();
    };
    try {
      await writeBatch(this.#db, this.#form, batch, settle, release, this.#options);
    } catch (err) {
      this.#log.error({ err, deliveries: batch.length }, 'writing webhook deliveries failed');
      for (const item of batch) if (!settled.has(item)) item.reject(err);
    }
  }
}

/**
 * One group: the accepts in one statement (see acceptDeliveries), answered as soon as it has committed; then
 * the log rows of duplicates and rejections in a second statement, when there are any. `written` is called once
 * the group has nothing more to write.
 */
async function writeBatch(
  db: Db,
  form: AcceptForm,
  batch: Pending[],
  settle: (item: Pending, outcome?: AcceptOutcome) => void,
  written: () => void,
  on: Pick<DeliveryWriterOptions, 'onQueued' | 'onLogged'>,
): Promise<void> {
  const accepts = batch.filter((p): p is PendingAccept => p.kind === 'accept');
  const logs = batch.filter((p): p is PendingLog => p.kind === 'log');
  const logged: DeliveryInsert[] = logs.map((p) => p.row);

  // The first delivery of each (webhook, identity) in this batch competes for acceptance; later ones repeat it.
  const first = new Map<string, PendingAccept>();
  const repeats: PendingAccept[] = [];
  for (const p of accepts) {
    const key = identityKey(p.row.webhookUid, p.row.identity);
    if (first.has(key)) repeats.push(p);
    else first.set(key, p);
  }
  // Sorted by key, so that concurrent statements take the unique-index locks in one order (no deadlock).
  const candidates = [...first.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
  const { accepted, live } = await form.accept(
    db,
    candidates.map((p) => ({ row: p.row, secretVersion: p.secretVersion })),
  );

  const acceptedIdByKey = new Map<string, string>();
  const lost: PendingAccept[] = [];
  const now = new Map<Pending, AcceptOutcome>();
  const later = new Map<Pending, AcceptOutcome>();
  let queued = 0;
  let acceptedCount = 0;
  for (const p of [...candidates, ...repeats]) {
    const hook = live.get(p.row.webhookUid);
    if (hook === undefined) {
      now.set(p, { outcome: 'gone' });
    } else if (hook.secretVersion !== p.secretVersion) {
      later.set(p, { outcome: 'secret_changed', id: p.row.id });
      logged.push(asRejectedAuth(p.row));
    } else if (accepted.has(p.row.id)) {
      acceptedIdByKey.set(identityKey(p.row.webhookUid, p.row.identity), p.row.id);
      if (hook.subscribed) queued++;
      acceptedCount++;
      now.set(p, { outcome: 'accepted', id: p.row.id });
    } else {
      lost.push(p);
    }
  }
  if (lost.length === 0 && logged.length === 0) written();
  for (const [p, outcome] of now) settle(p, outcome);
  if (queued > 0) on.onQueued?.();
  if (acceptedCount > 0) on.onLogged?.('accepted', acceptedCount);

  const missing = lost.filter((p) => !acceptedIdByKey.has(identityKey(p.row.webhookUid, p.row.identity)));
  const existing = await findAccepted(
    db,
    missing.map((p) => p.row),
  );
  for (const p of lost) {
    const key = identityKey(p.row.webhookUid, p.row.identity);
    const duplicateOf = acceptedIdByKey.get(key) ?? existing.get(key) ?? null;
    later.set(p, { outcome: 'duplicate', id: p.row.id, duplicateOf });
    logged.push({ ...p.row, label: 'duplicate', duplicateOf, payload: null });
  }
  await insertLogged(db, logged);
  written();
  const byLabel = new Map<DeliveryLabelCode, number>();
  for (const row of logged) byLabel.set(row.label, (byLabel.get(row.label) ?? 0) + 1);
  for (const [label, count] of byLabel) on.onLogged?.(label, count);
  for (const [p, outcome] of later) settle(p, outcome);
  for (const p of logs) settle(p);
}

function asRejectedAuth(row: DeliveryInsert): DeliveryInsert {
  return {
    ...row,
    label: 'rejected_auth',
    identity: null,
    identitySource: null,
    payload: null,
    reason: 'the webhook secret was rotated while this request was in flight; sign or authenticate with the new secret',
  };
}
