import type { AgentEvent, Assignment } from '../assignment.ts';
import type { HarnessType } from '../settings.ts';
import type { Workspace } from '../workspace.ts';
import type { BuiltinAgentSettings } from './agentyard.ts';

/** How to start the agent CLI for an execution. */
export interface Invocation {
  command: string;
  /** Never holds a secret: secrets go in `env` or in files of the workspace. */
  args: string[];
  /** Added to the minimal environment the agent starts with. */
  env: Record<string, string>;
  /** Written to stdin at start. */
  input?: string;
  /** stdin stays open for follow-ups during the run (live follow-ups). */
  keepStdinOpen: boolean;
  /** Directories the command needs besides its own, bound read-only into the sandbox at their own paths. */
  readOnly?: string[];
  /** Values `env` holds that are not in the assignment's `secretEnv`: redacted from every event too. */
  secrets?: string[];
}

/** Reads the CLI's streaming output, one line at a time, into run events. */
export interface OutputParser {
  line(text: string): AgentEvent[];
  /** Whatever it held back (a message still streaming in deltas). */
  end(): AgentEvent[];
}

/** How the exit of the CLI reads: a state of the run and a message. */
export interface ExitReading {
  kind: 'succeeded' | 'failed' | 'error';
  message: string;
  errorCode?: string;
}

export interface HarnessContext {
  assignment: Assignment;
  workspace: Workspace;
  /** The CLI's executable. */
  bin: string;
  /** Extra arguments configured for the harness (the `command` harness). */
  extraArgs: string[];
  /** The prompt text the agent gets, with the skill and attachment notes. */
  prompt: string;
  /** The built-in agent's endpoint and limits (the `agentyard` harness). */
  builtin?: BuiltinAgentSettings;
}

export interface HarnessAdapter {
  type: HarnessType;
  /** Follow-ups reach a running agent at its next turn (otherwise they wait for the next execution). */
  liveFollowups: boolean;
  /** Can continue an earlier session of the CLI by its id. */
  resumes: boolean;
  /** Writes the CLI's configuration files into the workspace and answers the command line. */
  prepare(ctx: HarnessContext): Promise<Invocation>;
  parser(): OutputParser;
  /** The stdin text that hands a follow-up to the running agent (harnesses with live follow-ups). */
  followupInput?(message: string): string;
  /** The agent finished a turn (stdin may be closed when no follow-up waits). */
  isTurnEnd?(event: AgentEvent): boolean;
  /** How many prompts (the first and live follow-ups) a turn-ending event answered; 1 when not given. */
  promptsAnswered?(event: AgentEvent): number;
  readExit(code: number | null, signal: NodeJS.Signals | null, lastResult: AgentEvent | undefined): ExitReading;
}
