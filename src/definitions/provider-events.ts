/**
 * What a GitHub, Slack or Linear delivery means in the trigger grammar (factory-definition.md § 5): the events
 * it produces and, for each, the values its filter keys are matched against. Pure: the same code serves
 * `agentyard validate`'s documentation and the outbox evaluator.
 */

/** The values of one filter key for one event (empty: the event has none, e.g. an issue without labels). */
export type Facts = Record<string, readonly (string | number)[]>;

export interface ProviderEvent {
  /** The trigger event name, e.g. `pull_request_merged`. */
  event: string;
  facts: Facts;
}

/**
 * Who caused an event, as a factory's trigger policy judges it (docs/governance.md, "Who may trigger").
 * GitHub: the `author_association` of the text the event is about when its sender wrote it (the comment, the
 * review, their own issue or pull request), `NONE` when the payload omits it; null when the sender acted on
 * someone else's item (labels, assignments, review requests, merges) or the event has no author (pushes,
 * checks, workflow runs): GitHub lets only people with triage or write access do those.
 * Slack and Linear: whether a bot or app caused it, and whether someone outside the workspace did.
 */
export type EventOrigin =
  | { provider: 'github'; login: string | null; association: string | null }
  | { provider: 'slack' | 'linear'; user: string | null; bot: boolean; external: string | null };

export interface DerivedEvents {
  /** `owner/name` (GitHub), the channel (Slack) or the team key (Linear), for the envelope; null when none. */
  subject: string | null;
  /** GitHub: the repository, lower-case `owner/name`; the routing key. */
  repository: string | null;
  /** Who caused the event, as the provider names accounts: GitHub login, Slack user id, Linear user id. */
  sender?: string | null;
  /** Who caused the event, for the trigger policy; absent: nobody to judge (no events). */
  origin?: EventOrigin;
  events: ProviderEvent[];
  /**
   * Linear: users mentioned by profile link in markdown whose ids the payload does not carry. Their ids are
   * looked up before `mentioned_user_ids` filters are matched (src/integrations/linear-mentions.ts).
   */
  mentionedProfiles?: string[];
}

type Obj = Record<string, unknown>;

function obj(value: unknown): Obj | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Obj) : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function strings(...values: unknown[]): string[] {
  return values.filter((v): v is string => typeof v === 'string' && v !== '');
}

function logins(users: unknown): string[] {
  return strings(...list(users).map((u) => obj(u)?.login));
}

function labelNames(labels: unknown): string[] {
  return strings(...list(labels).map((l) => obj(l)?.name));
}

// GitHub's rule for a login: alphanumerics and single hyphens; an @ inside a word (an e-mail) is no mention.
const MENTION = /(?:^|[^\w@/.-])@([a-z\d](?:[a-z\d]|-(?=[a-z\d])){0,38})(?:\/[\w.-]+)?/gi;

/** The logins @-mentioned in a text (team mentions `@org/team` count as the organisation's login). */
export function mentionsIn(text: string | undefined): string[] {
  if (!text) return [];
  const found = new Set<string>();
  for (const match of text.matchAll(MENTION)) found.add(match[1]!);
  return [...found];
}

const NONE: DerivedEvents = { subject: null, repository: null, events: [] };

// ── GitHub ───────────────────────────────────────────────────────────────────────────────────────────────

const PULL_REQUEST_ACTIONS: Record<string, string> = {
  opened: 'pull_request_opened',
  ready_for_review: 'pull_request_ready',
  labeled: 'pull_request_labeled',
  synchronize: 'pull_request_synchronized',
  reopened: 'pull_request_reopened',
  assigned: 'pull_request_assigned',
  review_requested: 'pull_request_review_requested',
};

/** Changed files a push names (added, modified, removed), across its commits. */
function pushPaths(payload: Obj): string[] {
  const paths = new Set<string>();
  for (const commit of [...list(payload.commits), payload.head_commit]) {
    const c = obj(commit);
    if (!c) continue;
    for (const key of ['added', 'modified', 'removed']) for (const p of strings(...list(c[key]))) paths.add(p);
  }
  return [...paths];
}

/**
 * The trigger events of a GitHub delivery: `eventType` is the `X-GitHub-Event` header. A pull request closed
 * with `merged: true` is `pull_request_merged`, otherwise `pull_request_closed`; text that @-mentions someone
 * (an opened issue or pull request, a comment, a review) is also `issue_mentioned` / `pull_request_mentioned`.
 */
export function githubEvents(eventType: string, body: unknown): DerivedEvents {
  const payload = obj(body);
  if (!payload) return NONE;
  const repo = str(obj(payload.repository)?.full_name);
  const repository = repo?.toLowerCase() ?? null;
  const repos = repo ? [repo] : [];
  const action = str(payload.action);
  const sender = str(obj(payload.sender)?.login);
  const events: ProviderEvent[] = [];
  const add = (event: string, facts: Facts) => events.push({ event, facts: { repos, ...facts } });

  switch (eventType) {
    case 'push': {
      const ref = str(payload.ref);
      // A deleted branch or a tag is not a push to a branch.
      if (payload.deleted === true || !ref?.startsWith('refs/heads/')) break;
      add('push', { branches: [ref], paths: pushPaths(payload) });
      break;
    }
    case 'issues': {
      const issue = obj(payload.issue);
      if (!issue) break;
      const labels = labelNames(issue.labels);
      const assignees = logins(issue.assignees);
      const authors = strings(obj(issue.user)?.login);
      if (action === 'opened') {
        add('issue_created', { labels, assignees, authors });
        const mentioned = mentionsIn(str(issue.body));
        if (mentioned.length > 0) add('issue_mentioned', { mentioned, labels });
      } else if (action === 'labeled') {
        add('issue_labeled', { labels: strings(obj(payload.label)?.name), assignees, authors });
      } else if (action === 'assigned') {
        add('issue_assigned', { assignees: strings(obj(payload.assignee)?.login), labels });
      }
      break;
    }
    case 'issue_comment': {
      const issue = obj(payload.issue);
      const comment = obj(payload.comment);
      if (!issue || !comment || action !== 'created') break;
      const mentioned = mentionsIn(str(comment.body));
      if (mentioned.length === 0) break;
      const onPullRequest = obj(issue.pull_request) !== undefined;
      add(onPullRequest ? 'pull_request_mentioned' : 'issue_mentioned', {
        mentioned,
        labels: labelNames(issue.labels),
      });
      break;
    }
    case 'pull_request': {
      const pr = obj(payload.pull_request);
      if (!pr || !action) break;
      const facts: Facts = {
        base_branches: strings(obj(pr.base)?.ref),
        pr_numbers: typeof pr.number === 'number' ? [pr.number] : [],
        assignees: logins(pr.assignees),
        authors: strings(obj(pr.user)?.login),
        labels: labelNames(pr.labels),
      };
      if (action === 'closed') {
        add(pr.merged === true ? 'pull_request_merged' : 'pull_request_closed', facts);
        break;
      }
      const event = PULL_REQUEST_ACTIONS[action];
      if (event === 'pull_request_labeled') add(event, { ...facts, labels: strings(obj(payload.label)?.name) });
      else if (event === 'pull_request_assigned')
        add(event, { assignees: strings(obj(payload.assignee)?.login), labels: facts.labels! });
      else if (event === 'pull_request_review_requested') {
        add(event, {
          reviewers: strings(obj(payload.requested_reviewer)?.login),
          reviewer_teams: strings(obj(payload.requested_team)?.slug, obj(payload.requested_team)?.name),
        });
      } else if (event) add(event, facts);
      if (action === 'opened') {
        const mentioned = mentionsIn(str(pr.body));
        if (mentioned.length > 0) add('pull_request_mentioned', { mentioned, labels: facts.labels! });
      }
      break;
    }
    case 'pull_request_review': {
      const pr = obj(payload.pull_request);
      const review = obj(payload.review);
      if (!pr || !review || action !== 'submitted') break;
      const labels = labelNames(pr.labels);
      const mentioned = mentionsIn(str(review.body));
      add('pull_request_review_submitted', { mentioned, labels, review_states: strings(review.state) });
      if (mentioned.length > 0) add('pull_request_mentioned', { mentioned, labels });
      break;
    }
    case 'pull_request_review_comment': {
      const pr = obj(payload.pull_request);
      const comment = obj(payload.comment);
      if (!pr || !comment || action !== 'created') break;
      const mentioned = mentionsIn(str(comment.body));
      if (mentioned.length > 0) add('pull_request_mentioned', { mentioned, labels: labelNames(pr.labels) });
      break;
    }
    case 'check_suite': {
      const suite = obj(payload.check_suite);
      if (!suite) break;
      if (action === 'rerequested') add('check_suite_rerequested', {});
      if (action === 'completed') {
        add('check_suite_completed', {
          conclusions: strings(suite.conclusion),
          branches: strings(suite.head_branch),
          labels: list(suite.pull_requests).flatMap((p) => labelNames(obj(p)?.labels)),
          authors: strings(sender),
        });
      }
      break;
    }
    case 'check_run':
      if (action === 'rerequested') add('check_run_rerequested', {});
      break;
    case 'workflow_run': {
      const run = obj(payload.workflow_run);
      if (!run || action !== 'completed') break;
      const workflowPath = str(run.path);
      add('workflow_run_completed', {
        conclusions: strings(run.conclusion),
        branches: strings(run.head_branch),
        labels: list(run.pull_requests).flatMap((p) => labelNames(obj(p)?.labels)),
        authors: strings(obj(run.actor)?.login, obj(run.triggering_actor)?.login),
        workflows: strings(run.name, obj(payload.workflow)?.name, workflowPath, workflowPath?.split('/').pop()),
      });
      break;
    }
  }
  return {
    subject: repo ?? null,
    repository,
    sender: sender ?? null,
    origin: { provider: 'github', login: sender ?? null, association: githubAssociation(payload, sender) },
    events,
  };
}

function githubAssociation(payload: Obj, sender: string | undefined): string | null {
  // What the sender wrote in this event: a comment or a review is always theirs.
  const written = obj(payload.comment) ?? obj(payload.review);
  if (written) return str(written.author_association) ?? 'NONE';
  const item = obj(payload.pull_request) ?? obj(payload.issue);
  if (item && sender !== undefined && str(obj(item.user)?.login) === sender)
    return str(item.author_association) ?? 'NONE';
  // An item without a sender or author to compare: judged as written by a stranger.
  if (item && (sender === undefined || str(obj(item.user)?.login) === undefined)) return 'NONE';
  return null;
}

// ── Slack ────────────────────────────────────────────────────────────────────────────────────────────────

// Message subtypes that are still a person writing (others: edits, deletions, joins, bot posts).
const PERSON_MESSAGE_SUBTYPES = new Set(['file_share', 'thread_broadcast', 'me_message']);

const CHANNEL_TYPE_EVENTS: Record<string, string[]> = {
  im: ['message_dm', 'message_im'],
  mpim: ['message_mpim'],
  channel: ['message_posted'],
  group: ['message_posted'],
};

/** The trigger events of a Slack Events API `event_callback` body. */
export function slackEvents(body: unknown): DerivedEvents {
  const payload = obj(body);
  const event = obj(payload?.event);
  if (payload?.type !== 'event_callback' || !event) return NONE;
  const type = str(event.type);
  const channel = str(event.channel) ?? str(obj(event.item)?.channel);
  const base = {
    subject: channel ?? null,
    repository: null,
    sender: str(event.user) ?? null,
    origin: slackOrigin(payload!, event),
  };
  const message: Facts = {
    channel_ids: strings(channel),
    user_ids: strings(event.user),
    keywords: strings(event.text),
  };
  switch (type) {
    case 'app_mention':
      return { ...base, events: [{ event: 'app_mention', facts: message }] };
    case 'message': {
      const subtype = str(event.subtype);
      // The bot's own messages (and other apps') never start runs: an agent answering would fire again.
      if (str(event.bot_id) || (subtype && !PERSON_MESSAGE_SUBTYPES.has(subtype))) return { ...base, events: [] };
      const names = CHANNEL_TYPE_EVENTS[str(event.channel_type) ?? ''] ?? [];
      return { ...base, events: names.map((name) => ({ event: name, facts: message })) };
    }
    case 'reaction_added':
      return {
        ...base,
        events: [
          {
            event: 'reaction_added',
            facts: {
              channel_ids: strings(channel),
              user_ids: strings(event.user),
              keywords: [],
              emojis: strings(event.reaction),
              item_user_ids: strings(event.item_user),
            },
          },
        ],
      };
    case 'member_joined_channel':
      return {
        ...base,
        events: [
          { event: 'member_joined_channel', facts: { channel_ids: strings(channel), user_ids: strings(event.user) } },
        ],
      };
    default:
      return { ...base, events: [] };
  }
}

/** A bot or app (bot_id, a bot profile, a bot_message); a user of another workspace (Slack Connect). */
function slackOrigin(payload: Obj, event: Obj): EventOrigin {
  const bot =
    str(event.bot_id) !== undefined || obj(event.bot_profile) !== undefined || event.subtype === 'bot_message';
  const home = new Set(strings(payload.team_id, ...list(payload.authorizations).map((a) => obj(a)?.team_id)));
  const team = str(event.user_team) ?? str(obj(event.user_profile)?.team) ?? str(event.team);
  const external = team !== undefined && home.size > 0 && !home.has(team) ? team : null;
  return { provider: 'slack', user: str(event.user) ?? null, bot, external };
}

// ── Linear ───────────────────────────────────────────────────────────────────────────────────────────────

// Linear's markdown writes a mention as a link to the user's profile, named by username (or, for some, the
// URL-encoded full name); `@name` in markdown mentions nobody.
const LINEAR_PROFILE_LINK = /https:\/\/linear\.app\/[\w.-]+\/profiles\/([^\s/?#)\]>"'`,;]+)/gi;

/** The profile names a Linear markdown text mentions, decoded, in order of first mention. */
export function linearProfileMentions(text: string | undefined): string[] {
  if (!text) return [];
  const found = new Set<string>();
  for (const match of text.matchAll(LINEAR_PROFILE_LINK)) {
    // A full stop after a link ends the sentence, not the name.
    let name = match[1]!.replace(/\.+$/, '');
    try {
      name = decodeURIComponent(name);
    } catch {
      // A malformed escape: keep the name as written.
    }
    if (name.trim()) found.add(name.trim());
  }
  return [...found];
}

const MAX_DOCUMENT_NODES = 10_000;

/**
 * The user ids of the mentions in a Linear rich-text document (`descriptionData`, `bodyData`: ProseMirror JSON,
 * as a string or an object), where a mention is a `suggestion_userMentions` node whose `attrs.id` is the user;
 * undefined when there is no document to read.
 */
export function linearDocumentMentions(document: unknown): string[] | undefined {
  let root: unknown = document;
  if (typeof root === 'string') {
    try {
      root = JSON.parse(root);
    } catch {
      return undefined;
    }
  }
  if (!obj(root)) return undefined;
  const ids = new Set<string>();
  const pending: unknown[] = [root];
  for (let next = 0; next < pending.length; next++) {
    const node = obj(pending[next]);
    if (!node) continue;
    if (node.type === 'suggestion_userMentions') {
      const id = str(obj(node.attrs)?.id);
      if (id) ids.add(id);
    }
    // one by one and only up to the budget: a spread of a huge `content` list would overflow the stack
    for (const child of list(node.content)) {
      if (pending.length >= MAX_DOCUMENT_NODES) break;
      pending.push(child);
    }
  }
  return [...ids];
}

/** Mentioned users of a text: ids from its document when the payload has one, else profile names from markdown. */
function linearMentions(markdown: unknown, document: unknown): { ids: string[]; profiles: string[] } {
  const ids = linearDocumentMentions(document);
  if (ids) return { ids, profiles: [] };
  return { ids: [], profiles: linearProfileMentions(str(markdown)) };
}

function issueFacts(issue: Obj, mentionedIds: string[] = []): Facts {
  return {
    team_ids: strings(issue.teamId, obj(issue.team)?.id),
    project_ids: strings(issue.projectId, obj(issue.project)?.id),
    labels: labelNames(issue.labels),
    state_ids: strings(issue.stateId, obj(issue.state)?.id),
    assignee_ids: strings(issue.assigneeId, obj(issue.assignee)?.id),
    mentioned_user_ids: mentionedIds,
    creator_ids: strings(issue.creatorId, obj(issue.creator)?.id),
  };
}

function dedupe(values: string[]): string[] {
  return [...new Set(values)];
}

/** The trigger events of a Linear webhook body (`type` + `action`, and `updatedFrom` for updates). */
export function linearEvents(body: unknown): DerivedEvents {
  const payload = obj(body);
  if (!payload) return NONE;
  const type = str(payload.type);
  const action = str(payload.action);
  const data = obj(payload.data);
  const events: ProviderEvent[] = [];
  let subject: string | null = null;
  let mentionedProfiles: string[] = [];
  if (type === 'Issue' && data) {
    const mentions = linearMentions(data.description, data.descriptionData);
    mentionedProfiles = mentions.profiles;
    const facts = issueFacts(data, mentions.ids);
    subject = str(data.identifier) ?? null;
    if (action === 'create') events.push({ event: 'issue_created', facts });
    if (action === 'update') {
      const before = obj(payload.updatedFrom) ?? {};
      if (Array.isArray(before.labelIds)) {
        const had = new Set(strings(...before.labelIds));
        const added = list(data.labels)
          .map(obj)
          .filter((l): l is Obj => l !== undefined && typeof l.id === 'string' && !had.has(l.id));
        const addedIds = strings(...list(data.labelIds)).filter((id) => !had.has(id));
        if (addedIds.length > 0)
          events.push({ event: 'issue_labeled', facts: { ...facts, labels: labelNames(added) } });
      }
      if ('stateId' in before && before.stateId !== data.stateId) events.push({ event: 'issue_state_changed', facts });
      if ('assigneeId' in before && str(data.assigneeId) && before.assigneeId !== data.assigneeId)
        events.push({ event: 'issue_assigned', facts });
    }
  } else if (type === 'Comment' && data && action === 'create') {
    const issue = obj(data.issue) ?? {};
    const issueSide = issueFacts(issue);
    const mentions = linearMentions(data.body, data.bodyData);
    mentionedProfiles = mentions.profiles;
    subject = str(issue.identifier) ?? null;
    events.push({
      event: 'comment_created',
      facts: {
        team_ids: dedupe([...issueSide.team_ids!.map(String), ...strings(obj(issue.team)?.id)]),
        project_ids: issueSide.project_ids!,
        labels: issueSide.labels!,
        state_ids: issueSide.state_ids!,
        issue_ids: strings(data.issueId, issue.id),
        mentioned_user_ids: mentions.ids,
        creator_ids: strings(data.userId, obj(data.user)?.id),
      },
    });
  } else if (type === 'AgentSessionEvent' && action === 'created') {
    const session = obj(payload.agentSession) ?? {};
    const issue = obj(session.issue) ?? {};
    subject = str(issue.identifier) ?? null;
    events.push({
      event: 'agent_session_created',
      facts: {
        team_ids: strings(issue.teamId, obj(issue.team)?.id),
        creator_ids: strings(session.creatorId, obj(session.creator)?.id),
        keywords: strings(obj(session.comment)?.body, payload.promptContext),
      },
    });
  }
  const session = obj(payload.agentSession);
  const actor = obj(payload.actor);
  const actorType = str(actor?.type)?.toLowerCase();
  // An app acts as `OauthClient` or `Integration`; a comment can also carry the app that posted it.
  const bot = (actorType !== undefined && actorType !== 'user') || obj(data?.botActor) !== undefined;
  // Comments synced from Slack and customer requests are written by people who are no users of the workspace.
  const externalUser =
    str(data?.externalUserId) ?? str(obj(data?.externalUser)?.id) ?? str(data?.externalUserCreatorId) ?? null;
  const sender =
    str(obj(payload.actor)?.id) ??
    (type === 'Comment' ? str(data?.userId) : undefined) ??
    (type === 'Issue' && action === 'create' ? str(data?.creatorId) : undefined) ??
    str(session?.creatorId) ??
    null;
  return {
    subject,
    repository: null,
    sender,
    origin: {
      provider: 'linear',
      user: sender,
      bot,
      external: externalUser === null ? null : `external user ${externalUser}`,
    },
    events,
    ...(mentionedProfiles.length > 0 && events.length > 0 ? { mentionedProfiles } : {}),
  };
}

/** The events of a delivery from one of the connected providers. */
export function providerEvents(provider: string, eventType: string | undefined, body: unknown): DerivedEvents {
  if (provider === 'github') return githubEvents(eventType ?? '', body);
  if (provider === 'slack') return slackEvents(body);
  if (provider === 'linear') return linearEvents(body);
  return NONE;
}
