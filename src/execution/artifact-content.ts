import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { MAX_ARTIFACT_FILE_BYTES } from '../runs/artifact-files.ts';
import type { AgentEvent } from './assignment.ts';

/**
 * A FILE or SCREENSHOT artifact an agent reports by its `filepath` in the workspace gets the file's bytes
 * (`content_base64`), read here where the workspace is, so that the server can serve them after the
 * workspace is gone. A path outside the workspace, a missing or an oversized file: an `error` event instead.
 */
export function withArtifactContent(events: AgentEvent[], workspaceDir: string): AgentEvent[] {
  if (!events.some((e) => e.type === 'artifact')) return events;
  const out: AgentEvent[] = [];
  for (const event of events) {
    const data = event.data.data as Record<string, unknown> | undefined;
    const type = event.data.artifact_type;
    if (
      event.type !== 'artifact' ||
      (type !== 'FILE' && type !== 'SCREENSHOT') ||
      !data ||
      typeof data !== 'object' ||
      typeof data.filepath !== 'string' ||
      typeof data.content_base64 === 'string'
    ) {
      out.push(event);
      continue;
    }
    const read = readWorkspaceFile(workspaceDir, data.filepath);
    if (typeof read === 'string') {
      out.push({ type: 'error', data: { message: `artifact ${data.filepath}: ${read}`, fatal: false } });
      continue;
    }
    out.push({ ...event, data: { ...event.data, data: { ...data, content_base64: read.toString('base64') } } });
  }
  return out;
}

/** The file's bytes, or why not. */
function readWorkspaceFile(workspaceDir: string, filepath: string): Buffer | string {
  try {
    const root = realpathSync(workspaceDir);
    const inside = (p: string) => p.startsWith(`${root}${path.sep}`);
    // Lexically first (a missing file outside is still outside), then through symbolic links.
    if (!inside(path.resolve(root, filepath))) return 'the path leaves the workspace';
    const file = realpathSync(path.resolve(root, filepath));
    if (!inside(file)) return 'the path leaves the workspace';
    const stat = statSync(file);
    if (!stat.isFile()) return 'not a regular file';
    if (stat.size > MAX_ARTIFACT_FILE_BYTES) return `over ${MAX_ARTIFACT_FILE_BYTES} bytes`;
    return readFileSync(file);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file in the workspace' : (err as Error).message;
  }
}
