/**
 * What a revision changes, read from its file list alone (docs/factory-files.md, "Tree layout"): each added,
 * changed or removed file named as the resource it defines. A refused revision has no plan (its files do not
 * validate), but this much can always be said about it.
 */
import type { Change } from './api-types.ts';
import type { RevisionFileDiff } from './pages/revision.ts';

const stem = (file: string) => file.replace(/\.(ya?ml|md)$/, '');

/** The resource a factory file defines, or undefined for a file that defines none (a README, a stray file). */
export function resourceOfPath(path: string): { kind: string; name: string } | undefined {
  const parts = path.split('/');
  const [top, second] = parts;
  if (path === 'factory.yaml') return { kind: 'factory', name: 'factory.yaml' };
  if (path.endsWith('/SKILL.md') && (top === 'skills' || (top === 'agents' && parts[2] === 'skills')))
    return { kind: 'skill', name: parts.slice(0, -1).join('/') };
  if (!second) return undefined;
  if (top === 'webhooks' && parts.length === 2) return { kind: 'webhook', name: stem(second) };
  if (top === 'runners' && parts.length === 2) return { kind: 'runner', name: stem(second) };
  if (top === 'automations') {
    if (parts.length === 2) return { kind: 'automation', name: stem(second) };
    if (parts.length === 3 && parts[2] === 'automation.md') return { kind: 'automation', name: second };
  }
  if (top === 'agents' && parts.length === 3 && parts[2] === 'agent.md') return { kind: 'agent', name: second };
  if (top === 'scorers' && parts.length === 3 && parts[2] === 'scorer.md') return { kind: 'scorer', name: second };
  if (top === 'benchmarks' && parts.length >= 3) return { kind: 'benchmark', name: second };
  return undefined;
}

const ACTION = { added: 'created', changed: 'updated', removed: 'deleted' } as const;

/**
 * The resources the changed files define, each once, by the file that defines it: created or deleted when that
 * file came or went, updated when it changed. A benchmark task's file only updates its suite.
 */
export function changesFromFiles(files: readonly RevisionFileDiff[]): Change[] {
  const byResource = new Map<string, Change & { defining: boolean }>();
  for (const f of files) {
    const resource = resourceOfPath(f.path);
    if (!resource) continue;
    const defining = !(resource.kind === 'benchmark' && f.path.split('/')[2] === 'tasks');
    const change = { ...resource, file: f.path, action: defining ? ACTION[f.status] : ('updated' as const), defining };
    const key = `${resource.kind}\u0000${resource.name}`;
    const seen = byResource.get(key);
    if (!seen || (defining && !seen.defining)) byResource.set(key, change);
  }
  return [...byResource.values()].map(({ defining: _, ...change }) => change);
}
