import type { FactoryFileInput } from '../../src/definitions/index.ts';

/** A minimal valid tree as in-memory files; `extra` replaces or adds files. */
export function tree(extra: Record<string, string> = {}): FactoryFileInput[] {
  const files: Record<string, string> = {
    'factory.yaml':
      'name: Test\nrepositories:\n  - {owner: acme, name: api}\nagentDefaults:\n  model: auto\n  runner: linux\n',
    'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\nLead.\n',
    'runners/linux.yaml': 'platform:\n  linux:\n    dockerImage: node:24\n',
    ...extra,
  };
  return Object.entries(files).map(([path, content]) => ({ path, content }));
}

export const UID = 'wh_01jz8k2m3n4p5q6r7s8t9v0w1x';
export const OTHER_UID = 'wh_01jz8k2m3n4p5q6r7s8t9v0w1y';

export function webhookAutomation(uid: string, extraFrontmatter = ''): string {
  return `---\n${extraFrontmatter}triggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${uid}]\n---\nHandle it.\n`;
}
