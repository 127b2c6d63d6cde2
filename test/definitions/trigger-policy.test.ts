/**
 * Who caused a provider event (read from the providers' published payloads) and what a factory's trigger
 * policy says about them: the default lets only people with a standing in the repository or workspace in.
 */
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { describe, expect, it } from 'vitest';
import { githubEvents, linearEvents, slackEvents } from '../../src/definitions/provider-events.ts';
import { DEFAULT_TRIGGER_POLICY, policyRefusal, triggerPolicyOf } from '../../src/definitions/trigger-policy.ts';
import { linearCommentCreated, SLACK_APP_MENTION } from '../integrations/fixtures.ts';

type Payload = Record<string, any>;

function githubExample(event: string, action: string): Payload {
  const entry = (examples as { name: string; examples: Payload[] }[]).find((e) => e.name === event)!;
  return structuredClone(entry.examples.find((x) => x.action === action)!);
}

/** The object whose author_association says who wrote what the event is about. */
const AUTHORED: [string, string, (p: Payload) => Payload][] = [
  ['issues', 'opened', (p) => p.issue],
  ['issue_comment', 'created', (p) => p.comment],
  ['pull_request', 'opened', (p) => p.pull_request],
  ['pull_request', 'synchronize', (p) => p.pull_request],
  ['pull_request_review', 'submitted', (p) => p.review],
  ['pull_request_review_comment', 'created', (p) => p.comment],
];

describe('GitHub: the author_association of what the sender wrote', () => {
  it.each(AUTHORED)('%s.%s from NONE is refused by default, from MEMBER allowed', (event, action, authored) => {
    const payload = githubExample(event, action);
    authored(payload).author_association = 'NONE';
    const derived = githubEvents(event, payload);
    expect(derived.origin).toEqual({ provider: 'github', login: payload.sender.login, association: 'NONE' });
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, derived.origin)).toBe(
      `skipped: ${payload.sender.login} (author_association NONE) may not trigger this factory; triggerPolicy.github.authorAssociations allows OWNER, MEMBER, COLLABORATOR`,
    );
    authored(payload).author_association = 'MEMBER';
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, githubEvents(event, payload).origin)).toBeUndefined();
  });

  it('a missing author_association counts as NONE', () => {
    const payload = githubExample('issues', 'opened');
    delete payload.issue.author_association;
    expect(githubEvents('issues', payload).origin).toMatchObject({ association: 'NONE' });
  });

  it("someone else's action on an item (a label, an assignment) needs triage access: it is not judged", () => {
    const payload = githubExample('issues', 'labeled');
    payload.issue.author_association = 'NONE';
    payload.issue.user.login = 'stranger';
    expect(githubEvents('issues', payload).origin).toMatchObject({ association: null });
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, githubEvents('issues', payload).origin)).toBeUndefined();
    // The stranger closing their own pull request is judged as the stranger.
    const closed = githubExample('pull_request', 'closed');
    closed.pull_request.author_association = 'NONE';
    expect(githubEvents('pull_request', closed).origin).toMatchObject({ association: 'NONE' });
  });

  it('a factory widens the list, or empties it', () => {
    const payload = githubExample('issues', 'opened');
    payload.issue.author_association = 'FIRST_TIME_CONTRIBUTOR';
    const origin = githubEvents('issues', payload).origin;
    const widened = triggerPolicyOf({ github: { authorAssociations: ['MEMBER', 'FIRST_TIME_CONTRIBUTOR'] } });
    expect(policyRefusal(widened, origin)).toBeUndefined();
    payload.issue.author_association = 'OWNER';
    const nobody = triggerPolicyOf({ github: { authorAssociations: [] } });
    expect(policyRefusal(nobody, githubEvents('issues', payload).origin)).toContain('allows nobody');
  });

  it('the policy of a stored definition without the key, or with a broken one, is the default', () => {
    expect(triggerPolicyOf(undefined)).toEqual(DEFAULT_TRIGGER_POLICY);
    expect(triggerPolicyOf(null)).toEqual(DEFAULT_TRIGGER_POLICY);
    expect(triggerPolicyOf({ github: 'all', slack: { allowBots: 'yes' } })).toEqual(DEFAULT_TRIGGER_POLICY);
    expect(triggerPolicyOf({ github: { authorAssociations: ['NONE', 'ROOT', 'NONE'] } }).github).toEqual({
      authorAssociations: ['NONE'],
    });
  });
});

describe('Slack: the workspace only, no bots', () => {
  const mention = (event: Payload, top: Payload = {}) =>
    slackEvents({ ...structuredClone(SLACK_APP_MENTION), ...top, event: { ...SLACK_APP_MENTION.event, ...event } });

  it('a member of the workspace is allowed', () => {
    const derived = mention({ team: 'T123ABC456', user_team: 'T123ABC456' });
    expect(derived.origin).toEqual({ provider: 'slack', user: 'U123ABC456', bot: false, external: null });
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, derived.origin)).toBeUndefined();
  });

  it('a bot is refused unless allowBots', () => {
    const origin = mention({ bot_id: 'B0AAA', bot_profile: { id: 'B0AAA', name: 'deploy-bot' } }).origin;
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, origin)).toBe(
      'skipped: Slack user U123ABC456 is a bot or app; triggerPolicy.slack.allowBots is false',
    );
    expect(policyRefusal(triggerPolicyOf({ slack: { allowBots: true } }), origin)).toBeUndefined();
  });

  it('a user of another workspace through Slack Connect is refused unless allowExternal', () => {
    const origin = mention({ user_team: 'T999OTHER', team: 'T999OTHER' }, { is_ext_shared_channel: true }).origin;
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, origin)).toBe(
      'skipped: Slack user U123ABC456 is not of this workspace (of workspace T999OTHER (Slack Connect)); triggerPolicy.slack.allowExternal is false',
    );
    expect(policyRefusal(triggerPolicyOf({ slack: { allowExternal: true } }), origin)).toBeUndefined();
    // A workspace the app is authorised in (Enterprise Grid) is home.
    const grid = mention({ user_team: 'T777GRID' }, { authorizations: [{ team_id: 'T777GRID' }] }).origin;
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, grid)).toBeUndefined();
  });
});

describe("Linear: the workspace's users only", () => {
  it('a user is allowed; an app or an external user is not', () => {
    const comment = linearCommentCreated('Please look');
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, linearEvents(comment).origin)).toBeUndefined();
    const byApp = { ...comment, actor: { id: 'app-1', type: 'OauthClient', name: 'Some app' } };
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, linearEvents(byApp).origin)).toContain(
      'triggerPolicy.linear.allowBots is false',
    );
    expect(policyRefusal(triggerPolicyOf({ linear: { allowBots: true } }), linearEvents(byApp).origin)).toBeUndefined();
    const synced = { ...comment, data: { ...comment.data, externalUserId: 'ext-42' } };
    expect(policyRefusal(DEFAULT_TRIGGER_POLICY, linearEvents(synced).origin)).toContain(
      'is not of this workspace (external user ext-42); triggerPolicy.linear.allowExternal is false',
    );
  });
});
