/** Factory trees for reconciler tests: the shared base (test/support/factory-tree.ts) plus automation files. */
import {
  automationMd as sharedAutomationMd,
  baseFiles as sharedBaseFiles,
  webhookYaml,
} from '../support/factory-tree.ts';

/** The shared base tree, its runs going to the self-hosted worker `build-box-1`. */
export function baseFiles(): Record<string, string> {
  return sharedBaseFiles({ workerHost: 'build-box-1' });
}

export { webhookYaml };

/** An automation on webhook `uid` for critical and high alerts. */
export function automationMd(uid: string): string {
  return sharedAutomationMd(uid, { payload: 'severity: [critical, high]' });
}

export function asFileList(files: Record<string, string>): { path: string; content: string }[] {
  return Object.entries(files).map(([path, content]) => ({ path, content }));
}
