/**
 * What the kernel context and the request types carry of callers and secrets, as interfaces: identity/ and
 * secrets/ implement them, so that src/context.ts and src/plugin.ts import no domain.
 */

/**
 * The caller an API key stands for. Declared empty here and filled in by identity/principal.ts (declaration
 * merging), so that whoever reads it sees identity's `Principal`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by identity/principal.ts
export interface RequestPrincipal {}

/** Resolves API keys to callers (identity/service.ts, Authenticator). */
export interface KeyAuthenticator {
  authenticate(key: string): Promise<RequestPrincipal | undefined>;
  /** `authenticate` for a request from `address`, with that address's budget of failed keys. */
  authenticateFrom(key: string, address: string): Promise<RequestPrincipal | undefined>;
  /**
   * Another bearer credential (a worker token, by its hash) from `address`, checked by `check` under the same
   * budget of failed attempts: 429 `rate_limited` while the address is over it.
   */
  checkFrom<T>(hash: string, address: string, check: () => Promise<T | undefined>): Promise<T | undefined>;
  /** Forgets every cached key (after a revocation). */
  invalidateAll(): void;
}

/** Encrypts secret values at rest with the instance master key (secrets/crypto.ts, SecretCipher). */
export interface Cipher {
  encrypt(plaintext: string): Buffer;
  decrypt(sealed: Uint8Array): string;
  deriveKey(purpose: string): Buffer;
}
