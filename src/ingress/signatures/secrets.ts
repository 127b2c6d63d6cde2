import { randomBytes } from 'node:crypto';
import type { SecretInterpretation, SecretRule } from './types.ts';

/** Problems every pasted secret can have, whatever the scheme. */
export function basicSecretProblem(secret: string): string | undefined {
  if (secret.length === 0) return 'the secret is empty';
  if (secret.trim() !== secret) return 'the secret has leading or trailing whitespace (a pasted newline?)';
  return undefined;
}

/** A secret the provider issues (shown in its dashboard); the service cannot make one up. */
export function providerIssuedSecret(
  description: string,
  obtain: string,
  extraCheck?: (secret: string) => string | undefined,
  interpretation: SecretInterpretation = 'utf8',
): SecretRule {
  const check = (secret: string) => basicSecretProblem(secret) ?? extraCheck?.(secret);
  return { interpretation, description, obtain, check };
}

/**
 * A secret the user types into the sender's settings (GitHub, GitLab, Bitbucket, …): the service can
 * generate a strong one to paste there. 32 random bytes, base64url: 43 URL- and YAML-safe characters.
 */
export function userChosenSecret(
  description: string,
  obtain: string,
  interpretation: SecretInterpretation = 'utf8',
): SecretRule {
  const generate = () => randomBytes(32).toString('base64url');
  return { ...providerIssuedSecret(description, obtain, undefined, interpretation), generate };
}
