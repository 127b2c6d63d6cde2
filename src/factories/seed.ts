/**
 * The first commit of a new managed factory, as the product seeds one: `factory.yaml`, a default runner and
 * the five default agents (foreman, triage, spec, implement, review). With it a webhook or an automation can
 * be added at once. Models are inherited from `agentDefaults` (`auto`), so the seed applies on any instance.
 */
import type { FactoryFileInput } from '../definitions/load.ts';

interface SeedAgent {
  name: string;
  agentType: string;
  description: string;
  prompt: string;
}

const AGENTS: readonly SeedAgent[] = [
  {
    name: 'foreman',
    agentType: 'FOREMAN',
    description: 'Orchestrates the factory workflow and dispatches each step.',
    prompt:
      'You are the foreman of this factory: the entry point of every request and of automations that name no agent.\nWork out what is asked, do small tasks yourself, and hand larger ones to the triage, spec, implement and review agents in turn.',
  },
  {
    name: 'triage',
    agentType: 'TRIAGE',
    description: 'Triages requests and establishes task state.',
    prompt:
      'You triage incoming requests: decide whether each is actionable, what it concerns and how urgent it is, and record what is known.',
  },
  {
    name: 'spec',
    agentType: 'SPEC',
    description: 'Writes specifications and drives their approval.',
    prompt: 'You write short specifications for accepted requests: the problem, the change, and how to check it.',
  },
  {
    name: 'implement',
    agentType: 'IMPLEMENT',
    description: 'Implements, validates and updates code changes.',
    prompt: 'You implement specified changes in the factory repositories, run their checks, and open pull requests.',
  },
  {
    name: 'review',
    agentType: 'REVIEW',
    description: 'Reviews pull requests and routes findings to rework or to a person.',
    prompt: 'You review pull requests against their specification and report findings that need rework.',
  },
];

/** The files of a new managed factory named `name`. */
export function seedFiles(name: string): FactoryFileInput[] {
  const factory = `schemaVersion: v1alpha1
name: ${JSON.stringify(name)}
# The repositories this factory works on: replace the placeholder.
repositories:
  - owner: example
    name: ${JSON.stringify(name)}
agentDefaults:
  model: auto
  runner: default
`;
  const runner = `description: Default Linux runner of the seeded agents.
platform:
  os: linux
  linux:
    dockerImage: ubuntu:24.04
`;
  return [
    { path: 'factory.yaml', content: factory },
    { path: 'runners/default.yaml', content: runner },
    ...AGENTS.map((a) => ({
      path: `agents/${a.name}/agent.md`,
      content: `---\nagentType: ${a.agentType}\ndescription: ${a.description}\n---\n\n${a.prompt}\n`,
    })),
  ];
}

export const SEED_COMMIT_MESSAGE = 'Create the factory: factory.yaml, the default runner and the default agents';
