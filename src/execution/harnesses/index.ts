import type { HarnessType } from '../settings.ts';
import { agentyardHarness } from './agentyard.ts';
import { claudeHarness } from './claude.ts';
import { codexHarness } from './codex.ts';
import { commandHarness } from './command.ts';
import { geminiHarness } from './gemini.ts';
import type { HarnessAdapter } from './types.ts';

/** The adapters that start a process; `noop` (benchmarks) finishes in process without one. */
export const HARNESS_ADAPTERS: Record<Exclude<HarnessType, 'noop'>, HarnessAdapter> = {
  claude: claudeHarness,
  codex: codexHarness,
  gemini: geminiHarness,
  command: commandHarness,
  agentyard: agentyardHarness,
};

export function adapterFor(type: HarnessType): HarnessAdapter | undefined {
  return type === 'noop' ? undefined : HARNESS_ADAPTERS[type];
}
