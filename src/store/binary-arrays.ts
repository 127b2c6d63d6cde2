/**
 * One-dimensional arrays in PostgreSQL's binary format (what `array_recv` reads), for parameters that carry a
 * column of many rows. Both engines take a Buffer parameter in binary format (`pg` does so for any Buffer,
 * PgliteStatements likewise), so the server copies each element instead of lexing text: for the delivery
 * groups of the ingress this is cheaper than one JSON parameter unpacked by `json_to_recordset`
 * (docs/decisions.md, "One statement accepts a group").
 *
 * Layout: ndim, has-nulls flag, element type OID, then per dimension its length and lower bound (all int32),
 * then each element as an int32 length (-1 for NULL) and its bytes in the element type's binary format.
 */

const TEXT_OID = 25;
const INT4_OID = 23;
const TIMESTAMPTZ_OID = 1184;

const HEADER_SIZE = 20;

/** PostgreSQL's epoch (2000-01-01 UTC) in Unix milliseconds. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);

function header(out: Buffer, elementType: number, length: number, hasNulls: boolean): number {
  out.writeInt32BE(1, 0);
  out.writeInt32BE(hasNulls ? 1 : 0, 4);
  out.writeUInt32BE(elementType, 8);
  out.writeInt32BE(length, 12);
  out.writeInt32BE(1, 16);
  return HEADER_SIZE;
}

/** A `text[]` parameter (strings as UTF-8). */
export function textArray(values: readonly (string | null)[]): Buffer {
  let size = HEADER_SIZE;
  let hasNulls = false;
  for (const value of values) {
    if (value === null) hasNulls = true;
    size += 4 + (value === null ? 0 : Buffer.byteLength(value));
  }
  const out = Buffer.allocUnsafe(size);
  let at = header(out, TEXT_OID, values.length, hasNulls);
  for (const value of values) {
    if (value === null) {
      out.writeInt32BE(-1, at);
      at += 4;
    } else {
      const written = out.write(value, at + 4);
      out.writeInt32BE(written, at);
      at += 4 + written;
    }
  }
  return out;
}

/** An `int4[]` parameter. */
export function int4Array(values: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE + 8 * values.length);
  let at = header(out, INT4_OID, values.length, false);
  for (const value of values) {
    out.writeInt32BE(4, at);
    out.writeInt32BE(value, at + 4);
    at += 8;
  }
  return out;
}

/** A `timestamptz[]` parameter (millisecond precision, as a Date has). */
export function timestamptzArray(values: readonly Date[]): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE + 12 * values.length);
  let at = header(out, TIMESTAMPTZ_OID, values.length, false);
  for (const value of values) {
    const ms = value.getTime();
    if (!Number.isFinite(ms)) throw new RangeError('an invalid Date cannot be sent as timestamptz');
    // int64 microseconds since 2000-01-01, written as two halves (exact up to 2^53 µs, ≈ 285 years either side)
    const micros = (ms - POSTGRES_EPOCH_MS) * 1000;
    const high = Math.floor(micros / 2 ** 32);
    out.writeInt32BE(8, at);
    out.writeInt32BE(high, at + 4);
    out.writeUInt32BE(micros - high * 2 ** 32, at + 8);
    at += 12;
  }
  return out;
}
