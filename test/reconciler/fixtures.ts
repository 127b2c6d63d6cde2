/** Factory trees for reconciler tests: the shared base (test/support/factory-tree.ts) plus automation files. */
import { baseFiles as sharedBaseFiles, webhookYaml } from '../support/factory-tree.ts';

/** The shared base tree, its runs going to the self-hosted worker `build-box-1`. */
export function baseFiles(): Record<string, string> {
  return sharedBaseFiles({ workerHost: 'build-box-1' });
}

export { webhookYaml };

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
