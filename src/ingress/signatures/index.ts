export { SIGNATURE_SCHEMES, SIGNATURE_SCHEME_IDS, generateSecretFor, getSignatureScheme } from './registry.ts';
export { safeEqual } from './primitives.ts';
export { redactSecret } from './redact.ts';
export type {
  HeaderMap,
  SecretInterpretation,
  SecretRule,
  SignatureAlgorithm,
  SignatureEncoding,
  SignatureScheme,
  TimestampRule,
  VerifyFailureReason,
  VerifyInput,
  VerifyResult,
} from './types.ts';
