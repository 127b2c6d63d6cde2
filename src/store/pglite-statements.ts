/**
 * Named prepared statements for PGlite. `PGlite.query` parses, describes and plans its statement afresh on
 * every call; for the service's hot statements (a run insert, a delivery group, an API key lookup) that
 * was most of their cost (docs/decisions.md, "Prepared statements on both engines"). Each
 * distinct statement text is parsed once under a name, its parameter types remembered, and then only
 * bound and executed, with the same parameter serialisers and result parsers `query` uses. The plan cache
 * of PostgreSQL re-plans a prepared statement after DDL on its tables by itself.
 */
import type { PGlite, Results } from '@electric-sql/pglite';
import { parse, protocol } from '@electric-sql/pglite';
import type { SqlValue } from '../kernel/db.ts';
import { Latin1Bytes } from './pglite-protocol.ts';

const { serialize } = protocol;

type BindValue = string | Uint8Array | Latin1Bytes | null;

/** Bytes go in binary format (bytea's is its bytes); everything else in text. */
function isBinary(value: unknown): value is Uint8Array | Latin1Bytes {
  return value instanceof Uint8Array || value instanceof Latin1Bytes;
}

interface Prepared {
  name: string;
  paramTypes: number[];
}

/** SQLSTATEs after which a statement is prepared again and run once more. */
const PREPARE_AGAIN = new Set([
  '0A000', // cached plan must not change result type (a table changed under `SELECT *`)
  '26000', // invalid_sql_statement_name: the statement is gone (DISCARD ALL, DEALLOCATE)
]);

/** Statement names are per connection; counted per process so that two caches on one PGlite never clash. */
let nextName = 1;

export class PgliteStatements {
  readonly #pglite: PGlite;
  readonly #max: number;
  /** By statement text, least recently used first. */
  readonly #prepared = new Map<string, Prepared>();
  readonly #message = new BindMessage();

  constructor(pglite: PGlite, options: { max?: number } = {}) {
    this.#pglite = pglite;
    this.#max = options.max ?? 500;
  }

  /** Runs one statement outside any transaction, as `PGlite.query` does, in PGlite's own turn. */
  query<Row>(text: string, params: readonly SqlValue[] = []): Promise<Results<Row>> {
    const pglite = this.#pglite;
    return pglite._runExclusiveTransaction(() =>
      pglite._runExclusiveQuery(async () => {
        try {
          return await this.#run<Row>(text, params);
        } catch (err) {
          if (!PREPARE_AGAIN.has((err as { code?: string }).code ?? '')) throw err;
          await this.#forget(text);
          return this.#run<Row>(text, params);
        }
      }),
    );
  }

  async #run<Row>(text: string, params: readonly SqlValue[]): Promise<Results<Row>> {
    const statement = await this.#statement(text);
    const pglite = this.#pglite;
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      // bytes travel in binary format, as `pg` sends a Buffer: a bytea as its bytes rather than as hex text made
      // in JavaScript, an array built by src/store/binary-arrays.ts as it is
      if (isBinary(value)) return value;
      const serializer = pglite.serializers[statement.paramTypes[i] ?? 0];
      return serializer ? serializer(value) : String(value);
    });
    const { messages } = await pglite.execProtocol(this.#message.bindAndExecute(statement.name, values), {
      syncToFs: false,
    });
    await pglite.syncToFs();
    return parse.parseResults(messages, pglite.parsers)[0] as Results<Row>;
  }

  async #statement(text: string): Promise<Prepared> {
    const known = this.#prepared.get(text);
    if (known) {
      this.#prepared.delete(text);
      this.#prepared.set(text, known);
      return known;
    }
    const name = `ay_s${nextName++}`;
    const { messages } = await this.#pglite.execProtocol(
      concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]),
      { syncToFs: false },
    );
    const prepared = { name, paramTypes: parse.parseDescribeStatementResults(messages) };
    this.#prepared.set(text, prepared);
    if (this.#prepared.size > this.#max) {
      const [oldest] = this.#prepared.keys();
      if (oldest !== undefined) await this.#forget(oldest);
    }
    return prepared;
  }

  async #forget(text: string): Promise<void> {
    const prepared = this.#prepared.get(text);
    if (!prepared) return;
    this.#prepared.delete(text);
    await this.#pglite
      .execProtocol(concat([serialize.close({ type: 'S', name: prepared.name }), serialize.sync()]), {
        syncToFs: false,
      })
      .catch(() => {});
  }
}

/** Describe (portal), Execute (all rows), Sync: the same bytes after every Bind. */
const DESCRIBE_EXECUTE_SYNC = concat([serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);

/** The largest buffer a BindMessage keeps from call to call. */
const MAX_KEPT_BUFFER = 1024 * 1024;

/**
 * Writes Bind + Describe + Execute + Sync into one buffer, reused from call to call. PGlite's own `serialize.bind`
 * counts UTF-8 bytes in a JavaScript loop and copies the values through three growing buffers, slow for a
 * batch's large parameter. PGlite reads the message before `execProtocol`
 * returns its promise, and statements run one at a time, so one buffer serves every call.
 */
class BindMessage {
  #buffer = Buffer.allocUnsafeSlow(16 * 1024);

  /**
   * A string is a value in text format (as PGlite's serializers write them), bytes are a value in binary format
   * (bytea's is its bytes), null is SQL NULL.
   */
  bindAndExecute(statement: string, values: readonly BindValue[]): Uint8Array {
    const binary = values.some(isBinary);
    let size = 1 + 4 + 1 + Buffer.byteLength(statement) + 1 + 2 + (binary ? 2 * values.length : 0) + 2 + 2;
    for (const value of values)
      size += 4 + (value === null ? 0 : typeof value === 'string' ? Buffer.byteLength(value) : value.length);
    const total = size + DESCRIBE_EXECUTE_SYNC.length;
    // a rare large statement (an attachment) gets a buffer of its own rather than one kept for good
    if (this.#buffer.length < total && total <= MAX_KEPT_BUFFER)
      this.#buffer = Buffer.allocUnsafeSlow(Math.min(MAX_KEPT_BUFFER, Math.max(total, this.#buffer.length * 2)));
    const out = this.#buffer.length >= total ? this.#buffer : Buffer.allocUnsafeSlow(total);
    let at = 0;
    out[at++] = 0x42; // 'B'
    out.writeInt32BE(size - 1, at);
    at += 4;
    out[at++] = 0; // unnamed portal
    at += out.write(statement, at);
    out[at++] = 0;
    if (binary) {
      out.writeUInt16BE(values.length, at);
      at += 2;
      for (const value of values) {
        out.writeUInt16BE(isBinary(value) ? 1 : 0, at);
        at += 2;
      }
    } else {
      out.writeUInt16BE(0, at); // no parameter format codes: all in text
      at += 2;
    }
    out.writeUInt16BE(values.length, at);
    at += 2;
    for (const value of values) {
      if (value === null) {
        out.writeInt32BE(-1, at);
        at += 4;
      } else if (typeof value === 'string') {
        const written = out.write(value, at + 4);
        out.writeInt32BE(written, at);
        at += 4 + written;
      } else if (value instanceof Latin1Bytes) {
        const written = out.write(value.latin1, at + 4, 'latin1');
        out.writeInt32BE(written, at);
        at += 4 + written;
      } else {
        out.writeInt32BE(value.length, at);
        out.set(value, at + 4);
        at += 4 + value.length;
      }
    }
    out.writeInt16BE(0, at); // results in text
    at += 2;
    out.set(DESCRIBE_EXECUTE_SYNC, at);
    return out.subarray(0, total);
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
