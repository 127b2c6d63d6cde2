/** Prefixes that say what a secret is without saying anything about its value. */
const KNOWN_PREFIXES = ['whsec_', 'whpk_', 'whsk_', 'lin_wh_', 'pdl_ntfset_'];
const MIN_LENGTH_TO_SHOW_TAIL = 20;

/**
 * A secret as it may appear in logs, errors and API answers: its known prefix and, for long secrets, the
 * last four characters, so a person can tell two secrets apart ("whsec_…Xy9="). Short secrets show nothing.
 */
export function redactSecret(secret: string): string {
  const prefix = KNOWN_PREFIXES.find((p) => secret.startsWith(p)) ?? '';
  const rest = secret.slice(prefix.length);
  if (rest.length === 0) return `${prefix}…`;
  return rest.length >= MIN_LENGTH_TO_SHOW_TAIL ? `${prefix}…${rest.slice(-4)}` : `${prefix}…`;
}
