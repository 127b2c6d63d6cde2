/**
 * A run's transcript by its download token: the token seals team, run and expiry with the master key, so whoever
 * holds it reads that team's run and no other. `GET /agent/runs/{runId}/transcript` makes the token for the
 * caller's team; the download route and the console's run page read through it.
 */
import { AppError } from '../kernel/errors.ts';
import { openGrant, sealGrant } from '../kernel/sealed-grant.ts';
import type { Cipher } from '../kernel/caller.ts';
import type { Queryable } from '../kernel/db.ts';
import type { RunRow } from '../engine/model.ts';
import type { StoredRunEvent } from '../engine/events.ts';
import { getRun, loadAllEvents } from './sql.ts';

export const TRANSCRIPT_URL_TTL_MS = 60 * 60 * 1000;

interface TranscriptGrant {
  /** team, run */
  t: string;
  r: string;
}

export function sealTranscriptToken(cipher: Cipher, teamId: string, runId: string, expiresAt: number): string {
  return sealGrant(cipher, 'transcript', { t: teamId, r: runId, e: expiresAt });
}

const TRANSCRIPT_LINK = {
  invalid: 'no such transcript (the download link is invalid)',
  expired: 'the transcript link has expired; ask for the transcript again',
};

export function openTranscriptToken(cipher: Cipher, token: string, now = Date.now()): TranscriptGrant {
  const { t, r } = openGrant(cipher, 'transcript', token, TRANSCRIPT_LINK, now);
  if (typeof t !== 'string' || typeof r !== 'string') throw new AppError('resource_not_found', TRANSCRIPT_LINK.invalid);
  return { t, r };
}

/** The run a token names, in the team it names, and every event of it in order; not found otherwise. */
export async function readTranscript(
  q: Queryable,
  cipher: Cipher,
  token: string,
): Promise<{ run: RunRow; events: StoredRunEvent[] }> {
  const grant = openTranscriptToken(cipher, token);
  const run = await getRun(q, grant.t, grant.r);
  if (!run) throw new AppError('resource_not_found', 'no such transcript');
  return { run, events: await loadAllEvents(q, run.id) };
}
