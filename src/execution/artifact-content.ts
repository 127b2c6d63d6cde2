import path from 'node:path';
import { MAX_ARTIFACT_FILE_BYTES } from '../runs/artifact-files.ts';
import type { AgentEvent } from './assignment.ts';
import { readFileInside, WorkspacePathError } from './workspace-fs.ts';

/**
 * A FILE or SCREENSHOT artifact an agent reports by its `filepath` in the workspace gets the file's bytes
 * (`content_base64`), read here where the workspace is, so that the server can serve them after the
 * workspace is gone. A path outside the workspace or through a symbolic link, a missing, special or oversized
 * file: an `error` event instead.
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

/** The file's bytes, or why not (a link anywhere on its path is refused: it is never followed). */
function readWorkspaceFile(workspaceDir: string, filepath: string): Buffer | string {
  try {
    const relative = path.isAbsolute(filepath) ? path.relative(workspaceDir, filepath) : filepath;
    return readFileInside(workspaceDir, relative, MAX_ARTIFACT_FILE_BYTES);
  } catch (err) {
    if (err instanceof WorkspacePathError)
      return err.message.endsWith('leaves the workspace') ? 'the path leaves the workspace' : err.message;
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'no such file in the workspace' : `cannot be read (${code ?? (err as Error).message})`;
  }
}
