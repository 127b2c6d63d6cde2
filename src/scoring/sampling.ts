import { createHash } from 'node:crypto';

/**
 * Whether a scorer samples a run, at `ratePercent` (0.01–100): decided by a hash of the run and the scorer,
 * so a scan that sees the run again decides the same, and every scorer samples independently.
 */
export function sampled(runId: string, scorer: string, ratePercent: number): boolean {
  if (ratePercent >= 100) return true;
  if (ratePercent <= 0) return false;
  const digest = createHash('sha256').update(`${runId}\0${scorer}`).digest();
  // 48 bits of the digest as a fraction of 1
  const fraction = digest.readUIntBE(0, 6) / 2 ** 48;
  return fraction < ratePercent / 100;
}
