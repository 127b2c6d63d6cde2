/**
 * Who may start a factory's runs through provider events (`triggerPolicy` in factory.yaml, an Agentyard
 * extension; docs/governance.md, "Who may trigger"). Pure: the validator resolves a file's policy with it,
 * and the outbox evaluator reads the stored one back through `triggerPolicyOf`.
 */
import type { EventOrigin } from './provider-events.ts';

/** GitHub's `author_association` values (the REST and webhook payloads' enum). */
export const GITHUB_AUTHOR_ASSOCIATIONS = [
  'OWNER',
  'MEMBER',
  'COLLABORATOR',
  'CONTRIBUTOR',
  'FIRST_TIME_CONTRIBUTOR',
  'FIRST_TIMER',
  'MANNEQUIN',
  'NONE',
] as const;
export type GithubAuthorAssociation = (typeof GITHUB_AUTHOR_ASSOCIATIONS)[number];

/** People of the workspace only, unless a flag lets bots or users of other organisations in too. */
export interface WorkspacePolicy {
  allowBots: boolean;
  allowExternal: boolean;
}

export interface TriggerPolicy {
  github: { authorAssociations: GithubAuthorAssociation[] };
  slack: WorkspacePolicy;
  linear: WorkspacePolicy;
}

/** What a factory without `triggerPolicy` allows: people with a standing in the repository or workspace. */
export const DEFAULT_TRIGGER_POLICY: TriggerPolicy = {
  github: { authorAssociations: ['OWNER', 'MEMBER', 'COLLABORATOR'] },
  slack: { allowBots: false, allowExternal: false },
  linear: { allowBots: false, allowExternal: false },
};

type Obj = Record<string, unknown>;

function obj(value: unknown): Obj | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Obj) : undefined;
}

function flag(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function workspace(value: unknown, fallback: WorkspacePolicy): WorkspacePolicy {
  const v = obj(value);
  return {
    allowBots: flag(v?.allowBots, fallback.allowBots),
    allowExternal: flag(v?.allowExternal, fallback.allowExternal),
  };
}

/**
 * The policy a `triggerPolicy` value means, every key not written taking its default. Anything that is not
 * the documented shape counts as not written (the schema refuses it in a file; a stored definition from
 * before the key existed has none).
 */
export function triggerPolicyOf(value: unknown): TriggerPolicy {
  const v = obj(value);
  const associations = obj(v?.github)?.authorAssociations;
  const known = new Set<string>(GITHUB_AUTHOR_ASSOCIATIONS);
  return {
    github: {
      authorAssociations: Array.isArray(associations)
        ? [...new Set(associations.filter((a): a is GithubAuthorAssociation => typeof a === 'string' && known.has(a)))]
        : [...DEFAULT_TRIGGER_POLICY.github.authorAssociations],
    },
    slack: workspace(v?.slack, DEFAULT_TRIGGER_POLICY.slack),
    linear: workspace(v?.linear, DEFAULT_TRIGGER_POLICY.linear),
  };
}

/**
 * Why `policy` lets no run start from an event of this origin (the reason the delivery log shows), or
 * undefined when it may start runs.
 */
export function policyRefusal(policy: TriggerPolicy, origin: EventOrigin | undefined): string | undefined {
  if (!origin) return undefined;
  if (origin.provider === 'github') {
    if (origin.association === null) return undefined;
    const allowed = policy.github.authorAssociations;
    if ((allowed as readonly string[]).includes(origin.association)) return undefined;
    const who = origin.login ? `${origin.login} (author_association ${origin.association})` : origin.association;
    return (
      `skipped: ${who} may not trigger this factory; triggerPolicy.github.authorAssociations allows ` +
      `${allowed.length > 0 ? allowed.join(', ') : 'nobody'}`
    );
  }
  const rules = policy[origin.provider];
  const provider = origin.provider === 'slack' ? 'Slack' : 'Linear';
  const who = origin.user ? `${provider} user ${origin.user}` : `the ${provider} event's author`;
  if (origin.bot && !rules.allowBots)
    return `skipped: ${who} is a bot or app; triggerPolicy.${origin.provider}.allowBots is false`;
  if (origin.external !== null && !rules.allowExternal) {
    const where = origin.provider === 'slack' ? `of workspace ${origin.external} (Slack Connect)` : origin.external;
    return `skipped: ${who} is not of this workspace (${where}); triggerPolicy.${origin.provider}.allowExternal is false`;
  }
  return undefined;
}
