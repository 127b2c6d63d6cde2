/**
 * Every enumeration value the server can serve is one the official clients declare: read from the installed
 * clients' own type files (the npm client's .d.ts, the Python client's Literal types), compared with the
 * server's own tables.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ERROR_CODES, ERROR_CODE_TABLE, RUN_SOURCE_TABLE } from '../../src/engine/client-enums.ts';
import { RUN_STATES } from '../../src/engine/state-machine.ts';
import { ensurePythonClient } from './support.ts';

const run = promisify(execFile);

/** The string literals of `export type <name> = 'A' | 'B' …;` in a .d.ts file. */
function literalUnion(dts: string, name: string): string[] {
  const match = new RegExp(`export type ${name} = ([^;]+);`).exec(dts);
  if (!match) throw new Error(`type ${name} not found`);
  return [...match[1]!.matchAll(/'([^']+)'/g)].map((m) => m[1]!);
}

const served = {
  sources: [...new Set(Object.values(RUN_SOURCE_TABLE))],
  errorCodes: [...new Set<string>([...Object.values(ERROR_CODE_TABLE), ...Object.keys(CLIENT_ERROR_CODES)])],
  states: [...RUN_STATES],
};

describe("the official clients' type files declare every value the server serves", () => {
  it('TypeScript (npm oz-agent-sdk, the installed devDependency)', () => {
    const dts = readFileSync(
      new URL('../../node_modules/oz-agent-sdk/resources/agent/runs.d.ts', import.meta.url),
      'utf8',
    );
    const sources = literalUnion(dts, 'RunSourceType');
    for (const source of served.sources) expect(sources, source).toContain(source);
    // 1.0.0-alpha.8 types status_message as {message?} only: any error_code is an extra member it ignores.
    const statusMessage = /interface StatusMessage \{([^}]*)\}/.exec(dts)?.[1] ?? '';
    if (/error_code\?:/.test(statusMessage)) {
      const codes = literalUnion(dts, 'ErrorCode');
      for (const code of served.errorCodes) expect(codes, code).toContain(code);
    }
    // alpha.8 predates BLOCKED and ERROR (reference §5); every other state is declared.
    const states = literalUnion(dts, 'RunState');
    expect(served.states.filter((s) => !states.includes(s)).sort()).toEqual(
      ['BLOCKED', 'ERROR'].filter((s) => !states.includes(s)),
    );
  });

  describe('Python (PyPI oz-agent-sdk, the newest)', () => {
    let declared: { sources: string[]; errorCodes: string[]; states: string[]; version: string };
    beforeAll(async () => {
      const { python } = await ensurePythonClient();
      const script = [
        'import json, typing, oz_agent_sdk',
        'from oz_agent_sdk.types.agent.run_source_type import RunSourceType',
        'from oz_agent_sdk.types.agent.run_state import RunState',
        'from oz_agent_sdk.types.error_code import ErrorCode',
        'print(json.dumps({"sources": typing.get_args(RunSourceType), "errorCodes": typing.get_args(ErrorCode),',
        '  "states": typing.get_args(RunState), "version": oz_agent_sdk.__version__}))',
      ].join('\n');
      declared = JSON.parse((await run(python, ['-c', script])).stdout);
    }, 600_000);

    it('RunSourceType, ErrorCode and RunState', () => {
      for (const source of served.sources) expect(declared.sources, source).toContain(source);
      for (const code of served.errorCodes) expect(declared.errorCodes, code).toContain(code);
      for (const state of served.states) expect(declared.states, state).toContain(state);
    });
  });
});
