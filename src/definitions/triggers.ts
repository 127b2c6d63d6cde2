/**
 * Trigger catalogue: the events of each provider and the filter keys each (provider, event) accepts.
 * Data only; src/definitions/check-triggers.ts applies it and docs/factory-files.md is generated from it.
 */

const GH_PR = ['repos', 'base_branches', 'pr_numbers', 'paths', 'assignees', 'authors', 'labels'];
/** The pull request events whose filters take `GH_PR`'s keys, `paths` among them. */
export const PULL_REQUEST_CHANGE_EVENTS: readonly string[] = [
  'pull_request_opened',
  'pull_request_ready',
  'pull_request_closed',
  'pull_request_merged',
  'pull_request_labeled',
  'pull_request_synchronized',
  'pull_request_reopened',
];
const GH_CHECK_SUITE = ['repos', 'conclusions', 'branches', 'labels', 'authors'];
const LINEAR_ISSUE = [
  'team_ids',
  'project_ids',
  'labels',
  'state_ids',
  'assignee_ids',
  'mentioned_user_ids',
  'creator_ids',
];
const LINEAR_COMMENT = [
  'team_ids',
  'project_ids',
  'labels',
  'state_ids',
  'issue_ids',
  'mentioned_user_ids',
  'creator_ids',
];
const SLACK_MESSAGE = ['channel_ids', 'user_ids', 'keywords'];

function events(keys: string[], names: readonly string[]): Record<string, string[]> {
  return Object.fromEntries(names.map((n) => [n, keys]));
}

export const TRIGGER_CATALOGUE: Record<string, Record<string, string[]>> = {
  webhook: { received: ['webhook_ids', 'payload'] },
  schedule: { cron_fired: ['schedule_ids'] },
  github: {
    push: ['repos', 'branches', 'paths'],
    ...events(['repos', 'labels', 'assignees', 'authors'], ['issue_created', 'issue_labeled']),
    ...events(GH_PR, PULL_REQUEST_CHANGE_EVENTS),
    ...events(['repos', 'mentioned', 'labels'], ['issue_mentioned', 'pull_request_mentioned']),
    ...events(['repos', 'assignees', 'labels'], ['issue_assigned', 'pull_request_assigned']),
    pull_request_review_requested: ['repos', 'reviewers', 'reviewer_teams'],
    pull_request_review_submitted: ['repos', 'mentioned', 'labels', 'review_states'],
    check_suite_completed: GH_CHECK_SUITE,
    workflow_run_completed: [...GH_CHECK_SUITE, 'workflows'],
    ...events(['repos'], ['check_run_rerequested', 'check_suite_rerequested']),
  },
  gitlab: {
    merge_request: ['repos', 'actions', 'base_branches'],
    bot_mentioned: ['repos', 'mentioned'],
  },
  linear: {
    ...events(LINEAR_ISSUE, ['issue_created', 'issue_labeled', 'issue_state_changed', 'issue_assigned']),
    comment_created: LINEAR_COMMENT,
    agent_session_created: ['team_ids', 'creator_ids', 'keywords'],
  },
  jira: {
    ...events(['project_keys', 'labels'], ['issue_created', 'issue_labeled']),
    status_changed: ['project_keys', 'status_ids'],
    agent_session_created: ['project_keys', 'labels', 'keywords'],
  },
  slack: {
    ...events(SLACK_MESSAGE, ['app_mention', 'message_dm', 'message_im', 'message_mpim', 'message_posted']),
    reaction_added: [...SLACK_MESSAGE, 'emojis', 'item_user_ids'],
    member_joined_channel: ['channel_ids', 'user_ids'],
  },
  factory: { work_item_stage_changed: ['stages'] },
};

/** Providers whose triggers this service evaluates; the others validate with a warning. */
export const TRIGGER_PROVIDERS_RUN_HERE: ReadonlySet<string> = new Set([
  'webhook',
  'schedule',
  'github',
  'slack',
  'linear',
]);

/** Integrations a factory's `integrations` may name that a team connects here (GitHub is reached by `repositories`). */
export const CONNECTED_INTEGRATIONS: ReadonlySet<string> = new Set(['slack', 'linear']);

/** Keys whose only matcher is `in` (a bare list or `{in: [...]}`). */
export const IN_ONLY_FILTER_KEYS: ReadonlySet<string> = new Set(['webhook_ids', 'schedule_ids']);

/** Keys whose values are integers rather than strings. */
export const INTEGER_FILTER_KEYS: ReadonlySet<string> = new Set(['pr_numbers']);

/** Keys whose values are Linear UUIDs. */
export const UUID_FILTER_KEYS: ReadonlySet<string> = new Set([
  'team_ids',
  'project_ids',
  'state_ids',
  'assignee_ids',
  'mentioned_user_ids',
  'creator_ids',
  'issue_ids',
]);

/** Keys compared case-sensitively when checking that no value is in both `in` and `not_in`. */
export const CASE_SENSITIVE_FILTER_KEYS: ReadonlySet<string> = new Set([
  'paths',
  'project_keys',
  'status_ids',
  'stages',
]);

/**
 * Authoring aliases, rewritten to the canonical key. Name aliases (`nameAlias`) hold names that the
 * product resolves to IDs at apply: a plain list, no `in`/`not_in`.
 */
export const FILTER_KEY_ALIASES: Record<string, Record<string, { canonical: string; nameAlias: boolean }>> = {
  github: {
    baseBranches: { canonical: 'base_branches', nameAlias: false },
    prNumbers: { canonical: 'pr_numbers', nameAlias: false },
  },
  linear: {
    teams: { canonical: 'team_ids', nameAlias: true },
    projects: { canonical: 'project_ids', nameAlias: true },
    states: { canonical: 'state_ids', nameAlias: true },
    issues: { canonical: 'issue_ids', nameAlias: true },
  },
  slack: {
    channels: { canonical: 'channel_ids', nameAlias: true },
    users: { canonical: 'user_ids', nameAlias: true },
    itemUsers: { canonical: 'item_user_ids', nameAlias: true },
  },
};
