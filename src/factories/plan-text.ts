/** A plan's changes as text, the same in `agentyard plan` and in the factory check on pull requests. */
import type { Change } from './apply/model.ts';

const SIGN: Record<Change['action'], string> = { created: '+', updated: '~', deleted: '-' };

/** One line per change: `+ webhook alerts (webhooks/alerts.yaml)`, `~ … : enabled, secret`. */
export function formatChanges(changes: readonly Change[]): string {
  return changes
    .map((c) => {
      const ids = [c.file, c.uid ? `uid ${c.uid}` : c.uid === null ? 'uid assigned at apply' : undefined]
        .filter(Boolean)
        .join(', ');
      const fields = c.fields?.length ? `: ${c.fields.join(', ')}` : '';
      const detail = c.detail ? ` — ${c.detail}` : '';
      return `  ${SIGN[c.action]} ${c.kind} ${c.name} (${ids})${fields}${detail}\n`;
    })
    .join('');
}

export function summary(changes: readonly Change[]): string {
  const count = (a: Change['action']) => changes.filter((c) => c.action === a).length;
  return `${count('created')} to create, ${count('updated')} to change, ${count('deleted')} to delete`;
}
