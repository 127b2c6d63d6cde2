/**
 * Provider events and trigger matching on GitHub's published example payloads (@octokit/webhooks-examples)
 * for every GitHub event of the reference's trigger table, and on Slack and Linear payloads as their docs
 * publish them: the event name each delivery means, and filters matched in canonical form.
 */
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { describe, expect, it } from 'vitest';
import {
  githubEvents,
  linearDocumentMentions,
  linearEvents,
  linearProfileMentions,
  mentionsIn,
  slackEvents,
} from '../../src/definitions/provider-events.ts';
import { matchesFilter, matchesKey } from '../../src/definitions/trigger-match.ts';
import { TRIGGER_CATALOGUE } from '../../src/definitions/triggers.ts';
import {
  LINEAR_AGENT_SESSION_CREATED,
  linearCommentCreated,
  linearIssueCreated,
  SLACK_APP_MENTION,
} from '../integrations/fixtures.ts';

type Payload = Record<string, any>;

function example(event: string, action: string | null, pick: (p: Payload) => boolean = () => true): Payload {
  const entry = (examples as { name: string; examples: Payload[] }[]).find((e) => e.name === event)!;
  return structuredClone(entry.examples.find((x) => (action === null || x.action === action) && pick(x))!);
}

function eventsOf(header: string, payload: Payload): string[] {
  return githubEvents(header, payload).events.map((e) => e.event);
}

describe('GitHub deliveries → trigger events', () => {
  const cases: [string, string, string | null, (p: Payload) => Payload][] = [
    ['push', 'push', null, (p) => p],
    ['issue_created', 'issues', 'opened', (p) => p],
    ['issue_labeled', 'issues', 'labeled', (p) => p],
    ['issue_assigned', 'issues', 'assigned', (p) => p],
    ['pull_request_opened', 'pull_request', 'opened', (p) => p],
    ['pull_request_ready', 'pull_request', 'ready_for_review', (p) => p],
    ['pull_request_closed', 'pull_request', 'closed', (p) => p],
    [
      'pull_request_merged',
      'pull_request',
      'closed',
      (p) => ({ ...p, pull_request: { ...p.pull_request, merged: true } }),
    ],
    ['pull_request_labeled', 'pull_request', 'labeled', (p) => p],
    ['pull_request_synchronized', 'pull_request', 'synchronize', (p) => p],
    ['pull_request_reopened', 'pull_request', 'reopened', (p) => p],
    ['pull_request_assigned', 'pull_request', 'assigned', (p) => p],
    ['pull_request_review_requested', 'pull_request', 'review_requested', (p) => p],
    ['pull_request_review_submitted', 'pull_request_review', 'submitted', (p) => p],
    ['check_suite_completed', 'check_suite', 'completed', (p) => p],
    ['check_suite_rerequested', 'check_suite', 'rerequested', (p) => p],
    ['check_run_rerequested', 'check_run', 'rerequested', (p) => p],
    ['workflow_run_completed', 'workflow_run', 'completed', (p) => p],
    [
      'issue_mentioned',
      'issue_comment',
      'created',
      (p) => ({ ...p, comment: { ...p.comment, body: 'Thanks, @Octo-Bot will take it' } }),
    ],
    [
      'pull_request_mentioned',
      'issue_comment',
      'created',
      (p) => ({
        ...p,
        issue: { ...p.issue, pull_request: { url: 'https://api.github.com/x' } },
        comment: { ...p.comment, body: '@octo-bot please review' },
      }),
    ],
  ];

  it('covers every GitHub event of the trigger catalogue', () => {
    expect(cases.map(([name]) => name).sort()).toEqual(Object.keys(TRIGGER_CATALOGUE.github!).sort());
  });

  it.each(cases)('%s from %s.%s', (name, header, action, change) => {
    const payload = change(
      example(header, action, header === 'push' ? (p) => p.ref === 'refs/heads/master' : undefined),
    );
    const derived = githubEvents(header, payload);
    expect(derived.events.map((e) => e.event)).toContain(name);
    expect(derived.repository).toBe(String(payload.repository.full_name).toLowerCase());
    // Every fact an event carries is a filter key of that event.
    for (const e of derived.events) {
      for (const key of Object.keys(e.facts)) expect(TRIGGER_CATALOGUE.github![e.event]).toContain(key);
    }
  });

  it('a closed, unmerged pull request is only pull_request_closed; a tag push is no push', () => {
    expect(eventsOf('pull_request', example('pull_request', 'closed'))).toEqual(['pull_request_closed']);
    expect(
      eventsOf(
        'push',
        example('push', null, (p) => p.ref.startsWith('refs/tags/')),
      ),
    ).toEqual([]);
  });

  it('matches filters in canonical form, every key ANDed', () => {
    const labeled = githubEvents('issues', example('issues', 'labeled')).events[0]!;
    expect(matchesFilter({ repos: { in: ['CODERTOCAT/hello-world'] }, labels: { in: ['BUG'] } }, labeled.facts)).toBe(
      true,
    );
    expect(matchesFilter({ repos: { in: ['codertocat/hello-world'] }, labels: { in: ['docs'] } }, labeled.facts)).toBe(
      false,
    );
    expect(matchesFilter({ labels: { not_in: ['bug'] } }, labeled.facts)).toBe(false);
    expect(matchesFilter({ authors: { in: ['codertocat'] } }, labeled.facts)).toBe(true);

    const push = githubEvents(
      'push',
      example('push', null, (p) => p.ref === 'refs/heads/master'),
    ).events[0]!;
    expect(matchesFilter({ branches: { in: ['master'] } }, push.facts)).toBe(true);
    expect(matchesFilter({ branches: { in: ['refs/heads/master'] } }, push.facts)).toBe(true);
    expect(matchesFilter({ branches: { in: ['main'] } }, push.facts)).toBe(false);

    const opened = githubEvents('pull_request', example('pull_request', 'opened')).events[0]!;
    expect(
      matchesFilter(
        { base_branches: { in: ['master'] }, pr_numbers: { in: [opened.facts.pr_numbers![0]!] } },
        opened.facts,
      ),
    ).toBe(true);
    expect(matchesFilter({ pr_numbers: { in: [99999] } }, opened.facts)).toBe(false);
    expect(matchesFilter({ labels: { not_in: ['skip-review'] } }, opened.facts)).toBe(true);

    const run = githubEvents(
      'workflow_run',
      example('workflow_run', 'completed', (p) => p.workflow_run.conclusion === 'success'),
    ).events[0]!;
    expect(matchesFilter({ conclusions: { in: ['SUCCESS'] }, branches: { in: ['master'] } }, run.facts)).toBe(true);
    expect(matchesFilter({ conclusions: { in: ['failure'] } }, run.facts)).toBe(false);
  });

  it('matches path globs over the changed files of a push', () => {
    const facts = { paths: ['src/app/main.ts', 'docs/readme.md'] };
    expect(matchesKey('paths', { in: ['src/**'] }, facts.paths)).toBe(true);
    expect(matchesKey('paths', { in: ['lib/**'] }, facts.paths)).toBe(false);
    expect(matchesKey('paths', { not_in: ['docs/**'] }, facts.paths)).toBe(true);
    expect(matchesKey('paths', { not_in: ['docs/**'] }, ['docs/a.md'])).toBe(false);
    expect(matchesKey('paths', { in: ['**/*.ts'] }, [])).toBe(false);
  });

  it('finds mentions in text, not in e-mail addresses', () => {
    expect(mentionsIn('cc @octo-bot and @Hubot, not me@example.com')).toEqual(['octo-bot', 'Hubot']);
    expect(mentionsIn('@acme/reviewers please')).toEqual(['acme']);
  });
});

describe('Slack and Linear deliveries → trigger events', () => {
  it('an app mention matches channel, user and keyword filters', () => {
    const [mention] = slackEvents(SLACK_APP_MENTION).events;
    expect(mention!.event).toBe('app_mention');
    expect(matchesFilter({ channel_ids: { in: ['C123ABC456'] }, keywords: { in: ['DEPLOY'] } }, mention!.facts)).toBe(
      true,
    );
    expect(matchesFilter({ keywords: { not_in: ['deploy'] } }, mention!.facts)).toBe(false);
    expect(matchesFilter({ user_ids: { in: ['U999'] } }, mention!.facts)).toBe(false);
  });

  it('messages are named by channel type; a bot message starts nothing; emoji match without colons or skin tone', () => {
    const message = (event: Payload) => ({ type: 'event_callback', event_id: 'Ev1', event });
    expect(
      slackEvents(message({ type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', text: 'hi' })).events.map(
        (e) => e.event,
      ),
    ).toEqual(['message_dm', 'message_im']);
    expect(
      slackEvents(
        message({ type: 'message', channel_type: 'channel', channel: 'C1', user: 'U1', text: 'hi' }),
      ).events.map((e) => e.event),
    ).toEqual(['message_posted']);
    expect(slackEvents(message({ type: 'message', channel_type: 'im', bot_id: 'B1', text: 'hi' })).events).toEqual([]);
    // https://api.slack.com/events/reaction_added
    const [reaction] = slackEvents(
      message({
        type: 'reaction_added',
        user: 'U123ABC456',
        reaction: 'thumbsup::skin-tone-2',
        item_user: 'U222222222',
        item: { type: 'message', channel: 'C123ABC456', ts: '1360782400.498405' },
        event_ts: '1360782804.083113',
      }),
    ).events;
    expect(
      matchesFilter({ emojis: { in: [':thumbsup:'] }, item_user_ids: { in: ['U222222222'] } }, reaction!.facts),
    ).toBe(true);
  });

  it('Linear: an agent session, a created issue and an added label', () => {
    const [session] = linearEvents(LINEAR_AGENT_SESSION_CREATED).events;
    expect(session!.event).toBe('agent_session_created');
    expect(
      matchesFilter(
        { team_ids: { in: ['9A8B7C6D-5E4F-4A3B-8C2D-1E0F9A8B7C6D'] }, keywords: { in: ['take this'] } },
        session!.facts,
      ),
    ).toBe(true);
    const issue = {
      id: '2b4c6d8e-0f1a-4b3c-8d5e-7f9a1b3c5d7e',
      identifier: 'ENG-123',
      teamId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
      stateId: '11111111-2222-4333-8444-555555555555',
      labelIds: ['aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee'],
      labels: [{ id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee', name: 'Agent' }],
    };
    expect(linearEvents({ type: 'Issue', action: 'create', data: issue }).events.map((e) => e.event)).toEqual([
      'issue_created',
    ]);
    const labeled = linearEvents({
      type: 'Issue',
      action: 'update',
      data: issue,
      updatedFrom: { labelIds: [] },
    }).events;
    expect(labeled.map((e) => e.event)).toEqual(['issue_labeled']);
    expect(matchesFilter({ labels: { in: ['agent'] } }, labeled[0]!.facts)).toBe(true);
  });

  it('Linear mentions: ids from the description document, profile names from markdown links', () => {
    const alice = { id: 'a11ce000-0000-4000-8000-000000000001', label: 'alice' };
    const bob = { id: 'b0b00000-0000-4000-8000-000000000002', label: 'bob' };
    const [created] = linearEvents(linearIssueCreated([alice, bob], 'c0ffee00-0000-4000-8000-000000000124')).events;
    expect(created!.facts.mentioned_user_ids).toEqual([alice.id, bob.id]);
    expect(matchesFilter({ mentioned_user_ids: { in: [alice.id.toUpperCase()] } }, created!.facts)).toBe(true);
    expect(matchesFilter({ mentioned_user_ids: { not_in: [bob.id] } }, created!.facts)).toBe(false);
    // With the document read, nothing is left to look up.
    expect(linearEvents(linearIssueCreated([alice], 'c0ffee00-0000-4000-8000-000000000125')).mentionedProfiles).toBe(
      undefined,
    );

    const comment = linearEvents(
      linearCommentCreated(
        'Could [@Alice](https://linear.app/acme/profiles/alice) and https://linear.app/acme/profiles/Bob%20Builder look? cc @carol',
      ),
    );
    expect(comment.events.map((e) => e.event)).toEqual(['comment_created']);
    expect(comment.events[0]!.facts.mentioned_user_ids).toEqual([]);
    expect(comment.mentionedProfiles).toEqual(['alice', 'Bob Builder']);
    expect(linearEvents(linearCommentCreated('No mention here, mail me@linear.app')).mentionedProfiles).toBe(undefined);
  });

  it('Linear mention parsing takes what the providers write and nothing else', () => {
    expect(
      linearProfileMentions(
        'see https://linear.app/acme/profiles/j.doe, https://linear.app/acme/issue/ENG-1 and https://linear.app/acme/profiles/max.',
      ),
    ).toEqual(['j.doe', 'max']);
    expect(linearProfileMentions('https://linear.app/acme/profiles/%E0%A4%A')).toEqual(['%E0%A4%A']);
    expect(linearDocumentMentions('not json')).toBe(undefined);
    expect(linearDocumentMentions({ type: 'doc', content: [{ type: 'paragraph' }] })).toEqual([]);
    expect(
      linearDocumentMentions({
        type: 'doc',
        content: [{ type: 'blockquote', content: [{ type: 'suggestion_userMentions', attrs: { id: 'u-1' } }] }],
      }),
    ).toEqual(['u-1']);
  });

  it('Linear documents that are huge or deep are read within a node budget, never overflowing the stack', () => {
    const mention = { type: 'suggestion_userMentions', attrs: { id: 'u-wide' } };
    const wide = { type: 'doc', content: [mention, ...new Array(600_000).fill({ type: 'paragraph' })] };
    expect(linearDocumentMentions(wide)).toEqual(['u-wide']);
    expect(linearDocumentMentions(JSON.stringify(wide))).toEqual(['u-wide']);
    let deep: Record<string, unknown> = { type: 'suggestion_userMentions', attrs: { id: 'u-deep' } };
    for (let i = 0; i < 20_000; i++) deep = { type: 'blockquote', content: [deep] };
    expect(linearDocumentMentions(deep)).toEqual([]);
    expect(linearDocumentMentions(`${'['.repeat(200_000)}${']'.repeat(200_000)}`)).toBe(undefined);
  });
});
