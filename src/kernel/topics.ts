/**
 * Every topic of the bus and the payload it carries. Messages are hints to read the database again, never the
 * only copy of a fact; a payload from another process is parsed JSON, so subscribers still check what they use.
 */

/** What started an apply of a factory (`factories/apply/model.ts` ApplyTrigger). */
export type SyncTrigger = 'poll' | 'sync' | 'push' | 'watch' | 'start' | 'managed';

export interface BusTopics {
  /** Published (coalesced, at most every 20 ms) after commits that accepted deliveries: the outbox has work. */
  'webhooks.deliveries_accepted': null;
  /**
   * The evaluator committed a batch: `deliveries` left the outbox (evaluated), starting `runs` runs. Tests wait on
   * it for a delivery's evaluation.
   */
  'webhooks.deliveries_evaluated': { deliveries: number; runs: number };
  /** The retention pass deleted `deliveries` old rows of the delivery log. */
  'webhooks.deliveries_purged': { deliveries: number };
  /** A sender's failed-authentication budget ran out: every ingress process blocks `key` until `until` (ms). */
  'webhooks.auth_budget_exhausted': { key: string; until: number };
  /**
   * After every change to webhook or automation rows (reconciler, webhook management API, factory service): the
   * ingress reloads its routes; the schedule sync re-reads the factory.
   */
  'webhooks.changed': { factory_id: string };
  /**
   * A factory was created, deleted or re-pointed, or a reconcile was recorded (with `result` and `revision`).
   * Controllers in other processes re-read the factory; the operator updates status from it.
   */
  'factories.changed': {
    factory_id: string;
    event: 'created' | 'deleted' | 'updated' | 'reconciled';
    result?: 'applied' | 'unchanged' | 'failed';
    revision?: string;
  };
  /** Asks the process that runs the factory's loops to fetch now (from API-only nodes). */
  'factories.sync_requested': { factory_id: string; trigger?: SyncTrigger };
  /** A run was queued (`run_id` null: several); `worker_host` names the self-hosted worker it waits for, null for the service's own. */
  'runs.queued': { run_id: string | null; worker_host: string | null };
  /** A run's state changed, a follow-up was queued on it, or its waiting message (a queued run's status) changed. */
  'runs.changed': { run_id: string; state?: string; followup_id?: string };
  /**
   * In this process only (never on the wire): a step of a run's life, told by the run engine after the change
   * committed. Tests wait on it (test/support/run-events.ts) instead of polling the run.
   */
  'runs.lifecycle': RunLifecycleEvent;
  /**
   * Executions ended (the end committed; a release too): told in this process after every end, and to the other
   * processes for the ends that left their run as it was (cancelled, lost, released); an end that moved its run
   * is on `runs.events` already. Tests wait on it for an execution's end (test/support/signals.ts).
   */
  'executions.ended': { execution_ids: string[]; run_ids: string[] };
  /** Events were appended to a run (`run_id`, `sequence`) or to several (`run_ids`). */
  'runs.events': { run_id: string; sequence?: number } | { run_ids: string[] };
  /** A scorer's judgement of a run was stored (scored or unscored): `/runs/{id}/scores` answers it now. */
  'scores.recorded': { run_id: string; scorer: string };
  /** A scheduler's tick fired `fired` due slots (creating `runs` runs; a fire whose runs failed counts too). */
  'schedules.fired': { fired: number; runs: number };
  /** A schedule changed: the scheduler re-reads its next fire times. */
  'schedules.changed': { team_id?: string; schedule_id?: string; factory_id?: string };
  /** A team secret was written or deleted. */
  'secrets.changed': { team_id: string; name: string };
  /** A team's GitHub, Slack or Linear connection was created, changed or deleted. */
  'integrations.changed': { team_id: string; provider: string };
  /** Integration jobs were enqueued (pull request files, factory checks, Linear mentions): the runners look now. */
  'integrations.jobs': null;
  /** An API key or agent credential was revoked: every process forgets its cached principals. */
  'identity.credentials_revoked': { key_id: string } | { agent_uid: string } | { worker_token_id: string };
}

/**
 * A step of a run's life: `created`; `claimed` (an executor took it: CLAIMED); `started` (INPROGRESS); `queued`
 * (back in the queue: released, continued by a follow-up); `blocked` (BLOCKED, waiting for a person); `finished`
 * (SUCCEEDED, FAILED, ERROR or CANCELLED). `state` is the state the step left.
 */
export interface RunLifecycleEvent {
  run_id: string;
  event: 'created' | 'claimed' | 'started' | 'queued' | 'blocked' | 'finished';
  state: string;
}

export type Topic = keyof BusTopics;

export const DELIVERIES_ACCEPTED_TOPIC = 'webhooks.deliveries_accepted' satisfies Topic;
export const DELIVERIES_EVALUATED_TOPIC = 'webhooks.deliveries_evaluated' satisfies Topic;
export const DELIVERIES_PURGED_TOPIC = 'webhooks.deliveries_purged' satisfies Topic;
export const AUTH_BUDGET_EXHAUSTED_TOPIC = 'webhooks.auth_budget_exhausted' satisfies Topic;
export const WEBHOOKS_CHANGED_TOPIC = 'webhooks.changed' satisfies Topic;
export const FACTORIES_CHANGED_TOPIC = 'factories.changed' satisfies Topic;
export const FACTORY_SYNC_REQUESTED_TOPIC = 'factories.sync_requested' satisfies Topic;
export const RUNS_QUEUED_TOPIC = 'runs.queued' satisfies Topic;
export const RUN_CHANGED_TOPIC = 'runs.changed' satisfies Topic;
export const RUN_LIFECYCLE_TOPIC = 'runs.lifecycle' satisfies Topic;
export const RUN_EVENTS_TOPIC = 'runs.events' satisfies Topic;
export const EXECUTIONS_ENDED_TOPIC = 'executions.ended' satisfies Topic;
export const SCORES_RECORDED_TOPIC = 'scores.recorded' satisfies Topic;
export const SCHEDULES_FIRED_TOPIC = 'schedules.fired' satisfies Topic;
export const SCHEDULES_CHANGED_TOPIC = 'schedules.changed' satisfies Topic;
export const SECRETS_CHANGED_TOPIC = 'secrets.changed' satisfies Topic;
export const INTEGRATIONS_CHANGED_TOPIC = 'integrations.changed' satisfies Topic;
export const INTEGRATION_JOBS_TOPIC = 'integrations.jobs' satisfies Topic;
export const CREDENTIALS_REVOKED_TOPIC = 'identity.credentials_revoked' satisfies Topic;
