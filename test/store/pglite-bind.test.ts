import { describe, expect, it } from 'vitest';
import { protocol } from '@electric-sql/pglite';
import { BindMessage } from '../../src/store/pglite-statements.ts';

const { serialize } = protocol;

function pgliteBytes(statement: string, values: (string | Uint8Array | null)[]): Uint8Array {
  return Buffer.concat([
    serialize.bind({ statement, values }),
    serialize.describe({ type: 'P' }),
    serialize.execute({}),
    serialize.sync(),
  ]);
}

/** PGlite's Bind lists a text format code per parameter; ours says "all text" once. The rest is the same. */
function withoutFormatCodes(bytes: Uint8Array, statement: string, count: number): number[] {
  const head = 1 + 4 + 1 + Buffer.byteLength(statement) + 1; // 'B', length, portal, statement
  const out = Buffer.concat([bytes.subarray(0, head), Buffer.from([0, 0]), bytes.subarray(head + 2 + 2 * count)]);
  out.writeInt32BE(out.readInt32BE(1) - 2 * count, 1);
  return [...out];
}

describe('the Bind message of prepared statements on PGlite', () => {
  const cases: [string, (string | null)[]][] = [
    ['ay_s1', []],
    ['ay_s2', ['1', null, 'text with é, ✓ and 𝄞', '']],
    ['ay_s3', ['x'.repeat(40_000)]],
  ];
  it.each(cases)('writes what PGlite writes for %s, with every parameter in text', (statement, values) => {
    const message = new BindMessage();
    const ours = [...message.bindAndExecute(statement, values)];
    expect(ours).toEqual(withoutFormatCodes(pgliteBytes(statement, values), statement, values.length));
  });

  it('writes what PGlite writes when some parameters are bytes, with a format code for each parameter', () => {
    const values = ['1', null, new Uint8Array([0, 1, 2, 255]), Buffer.from('{"a":"é"}'), 'é'];
    expect([...new BindMessage().bindAndExecute('ay_s5', values)]).toEqual([...pgliteBytes('ay_s5', values)]);
  });

  it('reuses its buffer without leaving bytes of a longer message behind', () => {
    const message = new BindMessage();
    message.bindAndExecute('ay_s4', ['a much longer parameter than the next one']);
    expect([...message.bindAndExecute('ay_s4', ['b'])]).toEqual(
      withoutFormatCodes(pgliteBytes('ay_s4', ['b']), 'ay_s4', 1),
    );
  });
});
