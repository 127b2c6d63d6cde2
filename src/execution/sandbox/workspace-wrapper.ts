/**
 * The workspace wrapper: the first process of a bubblewrap sandbox whose workspace is a size-limited tmpfs.
 * It copies the host's workspace in (bound read-only at SANDBOX_SEED_DIR), runs the agent's command, and once
 * the command has exited kills every other process of the sandbox (its pid namespace) so that nothing can
 * change the workspace any more, then tells the server on fd 3 and waits while the server copies the
 * workspace out through /proc/<pid>/root (execution/sandbox-workspace.ts). The server's answer ends it, and
 * with it the sandbox.
 *
 * It speaks one line per message on fd 3, a socket the server made (the agent's command does not inherit it):
 * - `started`: the workspace was copied in and the command started;
 * - `copy-in-failed`: the host's workspace did not fit (or could not be read); the command was not started;
 * - `ended <status> <free blocks> <block size>`: the command exited with `status` (128+N: killed by signal
 *   N); the free space of the workspace when it did, before the processes it left were killed.
 * The server answers `done` to the last two. Nothing it reads there is trusted: the copy-out follows no link.
 */

/** Where the host's workspace is bound read-only inside the sandbox, for the copy in. */
export const SANDBOX_SEED_DIR = '/run/agentyard-workspace';

const SCRIPT = [
  'seed=$1 ws=$2',
  'shift 2',
  'if ! cp -a -- "$seed/." "$ws/"; then',
  '  echo copy-in-failed >&3',
  '  read -r answer <&3',
  '  exit 125',
  'fi',
  'echo started >&3',
  // SIGTERM is meant for the agent: the wrapper waits for it (a handler, not an ignore, which would be inherited)
  "trap 'true' TERM INT HUP",
  '"$@" 3>&-',
  'status=$?',
  'free=$(stat -f -c "%a %S" -- "$ws" 2>/dev/null) || free="0 0"',
  // every process the command left (kill -1 spares this shell and the sandbox's init); zombies answer too
  'i=0',
  'while kill -9 -1 2>/dev/null && [ $i -lt 50 ]; do i=$((i+1)); done',
  // what the agent made unreadable to its owner becomes readable again (links are not followed)
  'chmod -R u+rwX -- "$ws" 2>/dev/null',
  'echo "ended $status $free" >&3',
  'read -r answer <&3',
  'exit $status',
].join('\n');

/** The wrapper's argv, before the agent's command and its arguments. */
export function workspaceWrapperArgs(workspace: string): string[] {
  return ['/bin/sh', '-c', SCRIPT, 'agentyard-workspace', SANDBOX_SEED_DIR, workspace];
}

/** A message of the wrapper, parsed; undefined for anything else. */
export type WrapperMessage =
  | { kind: 'started' }
  | { kind: 'copy-in-failed' }
  | { kind: 'ended'; status: number; freeBytes: number | undefined };

export function parseWrapperLine(line: string): WrapperMessage | undefined {
  const parts = line.trim().split(/\s+/);
  if (parts[0] === 'started' && parts.length === 1) return { kind: 'started' };
  if (parts[0] === 'copy-in-failed' && parts.length === 1) return { kind: 'copy-in-failed' };
  if (parts[0] === 'ended' && parts.length === 4 && parts.slice(1).every((p) => /^\d{1,19}$/.test(p))) {
    const [status, blocks, size] = parts.slice(1).map(Number) as [number, number, number];
    return { kind: 'ended', status, freeBytes: size > 0 ? blocks * size : undefined };
  }
  return undefined;
}
