import { randomBytes, randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

// Crockford's base32, lower-case: ids sort by creation time and read well in URLs and logs.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
let lastTime = 0;
let lastRandom: Uint8Array = new Uint8Array(10);

/** A ULID in lower case: 10 characters of millisecond time, 16 of randomness (monotonic within a ms). */
export function ulid(now = Date.now()): string {
  let random: Uint8Array;
  if (now === lastTime) {
    random = new Uint8Array(lastRandom);
    for (let i = random.length - 1; i >= 0; i--) {
      random[i] = (random[i]! + 1) & 0xff;
      if (random[i] !== 0) break;
    }
  } else {
    random = new Uint8Array(randomBytes(10));
  }
  lastTime = now;
  lastRandom = random;
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  let bits = 0;
  let value = 0;
  let rand = '';
  for (const byte of random) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      rand += ALPHABET[(value >>> (bits - 5)) & 31]!;
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return time + rand;
}

export type IdPrefix =
  | 'team'
  | 'wtk'
  | 'igc'
  | 'igj'
  | 'usr'
  | 'sa'
  | 'key'
  | 'run'
  | 'fu'
  | 'qst'
  | 'fac'
  | 'wh'
  | 'auto'
  | 'dlv'
  | 'apl'
  | 'sec'
  | 'exe'
  | 'sch'
  | 'evt'
  | 'wrk'
  | 'agt'
  | 'scj'
  | 'bch';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

/** Random URL-safe text for secrets and tokens. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

// One CSPRNG call per 256 ids instead of one each (crypto.getRandomValues, which uuid calls for every id, cost
// too much on the request path: docs/decisions.md); node:crypto's randomUUID caches its entropy the same way.
const entropy = Buffer.alloc(4096);
let entropyUsed = entropy.length;

function random16(): Uint8Array {
  if (entropyUsed + 16 > entropy.length) {
    randomFillSync(entropy);
    entropyUsed = 0;
  }
  const bytes = entropy.subarray(entropyUsed, entropyUsed + 16);
  entropyUsed += 16;
  return bytes;
}

/** A UUIDv7: time-ordered to the millisecond (an index takes new ones at one end), 74 random bits. */
export function timeOrderedUuid(): string {
  return uuidv7({ random: random16() });
}
