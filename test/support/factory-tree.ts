/**
 * Factory trees for tests that reconcile a real repository: a valid base (factory.yaml, a foreman, a runner),
 * webhook files and automations on them. Write them into a repository with `createGitRemote()`
 * (test/sources/git-fixture.ts).
 */

export interface FactoryYamlOptions {
  name?: string;
  workerHost?: string;
}

/** factory.yaml (named "Alert triage" unless `name`); `workerHost` sends the factory's runs to that self-hosted worker. */
export function factoryYaml(options: FactoryYamlOptions = {}): string {
  return `schemaVersion: v1alpha1
name: ${options.name ?? 'Alert triage'}
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: default
${options.workerHost ? `  workerHost: ${options.workerHost}\n` : ''}`;
}

/** factory.yaml of a factory on Codertocat/Hello-World (the repository of GitHub's example payloads) with these integrations. */
export function providerFactoryYaml(name: string, integrations: readonly string[]): string {
  return `schemaVersion: v1alpha1
name: ${name}
repositories:
  - owner: Codertocat
    name: Hello-World
integrations:
${integrations.map((type) => `  - type: ${type}\n`).join('')}agentDefaults:
  model: auto
  runner: default
`;
}

export const FOREMAN = `---
agentType: FOREMAN
description: Receives alerts.
---

You are the on-call foreman.
`;

export const RUNNER = `platform:
  os: linux
  linux:
    dockerImage: node:24-bookworm
`;

export function baseFiles(options: FactoryYamlOptions = {}): Record<string, string> {
  return { 'factory.yaml': factoryYaml(options), 'agents/foreman/agent.md': FOREMAN, 'runners/default.yaml': RUNNER };
}

export function webhookYaml(
  secretName: string,
  options: { authMode?: string; enabled?: boolean; extra?: string } = {},
): string {
  return `authMode: ${options.authMode ?? 'token'}\nsecretName: ${secretName}\nenabled: ${options.enabled ?? true}\n${options.extra ?? ''}`;
}

/** `automations/<name>/automation.md` with one webhook trigger on `uid`; `payload` is a YAML filter line. */
export function automationMd(uid: string, options: { payload?: string; prompt?: string } = {}): string {
  return `---
triggers:
  - provider: webhook
    event: received
    filter:
      webhook_ids: [${uid}]
${options.payload ? `      payload:\n        ${options.payload}\n` : ''}---

${options.prompt ?? 'Investigate the alert in event-payload.json.'}
`;
}
