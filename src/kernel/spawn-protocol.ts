/** What src/kernel/spawner.ts and its spawner process (spawner-process.ts) say to each other. */

export interface SpawnOrder {
  id: string;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Standard streams to give the child: 3 (stdin, stdout, stderr) or 4 (and fd 3). */
  streams: number;
  /** The server's listener, where each stream connects. */
  socketPath: string;
}

export type SpawnReply =
  | { kind: 'spawned'; id: string; pid: number }
  | { kind: 'failed'; id: string; message: string; code: string | undefined }
  | { kind: 'exited'; id: string; code: number | null; signal: NodeJS.Signals | null };

/** A spawn's id: 32 hex characters (128 random bits), which a local process cannot guess. */
export const SPAWN_ID_LENGTH = 32;

/** Bytes of the header that opens each stream's connection: the spawn's id, then the stream's index (one digit). */
export const STREAM_HEADER_BYTES = SPAWN_ID_LENGTH + 1;

export function streamHeader(id: string, index: number): string {
  return `${id}${index}`;
}
