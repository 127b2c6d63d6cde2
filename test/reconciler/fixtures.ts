/** Factory trees for reconciler tests: a valid base plus webhook and automation files. */

export const FACTORY_YAML = `schemaVersion: v1alpha1
name: Alert triage
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: default
  workerHost: build-box-1
`;

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

export function baseFiles(): Record<string, string> {
  return { 'factory.yaml': FACTORY_YAML, 'agents/foreman/agent.md': FOREMAN, 'runners/default.yaml': RUNNER };
}

export function webhookYaml(secretName: string, options: { authMode?: string; enabled?: boolean; extra?: string } = {}): string {
  return `authMode: ${options.authMode ?? 'token'}\nsecretName: ${secretName}\nenabled: ${options.enabled ?? true}\n${options.extra ?? ''}`;
}

export function automationMd(uid: string, payload = 'severity: [critical, high]'): string {
  return `---
triggers:
  - provider: webhook
    event: received
    filter:
      webhook_ids: [${uid}]
      payload:
        ${payload}
---

Investigate the alert in event-payload.json.
`;
}

export function asFileList(files: Record<string, string>): { path: string; content: string }[] {
  return Object.entries(files).map(([path, content]) => ({ path, content }));
}
