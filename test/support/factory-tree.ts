/**
 * Factory trees for tests that reconcile a real repository: a valid base (factory.yaml, a foreman, a runner)
 * and webhook files. Write them into a repository with `createGitRemote()` (test/sources/git-fixture.ts).
 */

/** factory.yaml (named "Alert triage" unless `name`); `workerHost` sends the factory's runs to that self-hosted worker. */
export function factoryYaml(options: { name?: string; workerHost?: string } = {}): string {
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

export function baseFiles(options: { workerHost?: string } = {}): Record<string, string> {
  return { 'factory.yaml': factoryYaml(options), 'agents/foreman/agent.md': FOREMAN, 'runners/default.yaml': RUNNER };
}

export function webhookYaml(secretName: string, options: { authMode?: string; enabled?: boolean; extra?: string } = {}): string {
  return `authMode: ${options.authMode ?? 'token'}\nsecretName: ${secretName}\nenabled: ${options.enabled ?? true}\n${options.extra ?? ''}`;
}
