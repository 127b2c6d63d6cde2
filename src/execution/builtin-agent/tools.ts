/**
 * The built-in agent's own tools: a shell, reading, writing and editing a file, listing a directory. They run
 * in the agent's process, so inside the run's sandbox: the workspace is the only writable place. Arguments
 * come from the model and are checked here; a bad argument is a tool error the model reads, never a crash.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface ToolOutcome {
  ok: boolean;
  /** What the model reads as the tool's result. */
  text: string;
  /** The tool_result event's `output`. */
  output: Record<string, unknown>;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  /** The run event's category. */
  category: string;
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome>;
}

export interface ToolContext {
  cwd: string;
  /** The environment of commands the shell runs (no model key in it). */
  env: Record<string, string>;
  signal: AbortSignal;
}

/** A tool argument that is not what the schema says. */
export class ToolArgumentError extends Error {}

/** Longest tool output the model reads; the middle of longer output is cut. */
export const MAX_TOOL_OUTPUT = 64 * 1024;
/** Largest file read_file answers whole. */
const MAX_READ = 256 * 1024;
const DEFAULT_SHELL_TIMEOUT_S = 300;

export function clipText(text: string, max = MAX_TOOL_OUTPUT): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[… ${text.length - max} characters cut …]\n${text.slice(-half)}`;
}

function str(args: Record<string, unknown>, key: string, required: true): string;
function str(args: Record<string, unknown>, key: string, required: false): string | undefined;
function str(args: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const v = args[key];
  if (v === undefined || v === null) {
    if (required) throw new ToolArgumentError(`\`${key}\` is required (a string)`);
    return undefined;
  }
  if (typeof v !== 'string') throw new ToolArgumentError(`\`${key}\` must be a string, got ${typeof v}`);
  return v;
}

function int(args: Record<string, unknown>, key: string, min: number): number | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
    throw new ToolArgumentError(`\`${key}\` must be an integer of at least ${min}`);
  return v;
}

function bool(args: Record<string, unknown>, key: string): boolean {
  const v = args[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new ToolArgumentError(`\`${key}\` must be true or false`);
  return v;
}

function target(ctx: ToolContext, p: string): string {
  if (p.includes('\0')) throw new ToolArgumentError('`path` must not contain a NUL character');
  return path.resolve(ctx.cwd, p);
}

const fail = (text: string, output: Record<string, unknown> = {}): ToolOutcome => ({
  ok: false,
  text,
  output: { error: text, ...output },
});

function fsError(err: unknown, p: string): ToolOutcome {
  const e = err as NodeJS.ErrnoException;
  const why =
    e.code === 'ENOENT'
      ? 'no such file or directory'
      : e.code === 'EACCES' || e.code === 'EROFS' || e.code === 'EPERM'
        ? 'not allowed here (the workspace is the only writable place)'
        : e.code === 'EISDIR'
          ? 'is a directory'
          : e.code === 'ENOTDIR'
            ? 'not a directory'
            : e.message;
  return fail(`${p}: ${why}`);
}

const shell: ToolSpec = {
  name: 'shell',
  category: 'command',
  description:
    'Run a shell command (/bin/sh -c) in the working directory. Answers its exit code and its combined stdout and stderr.',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The command line.' },
      timeout_seconds: { type: 'integer', minimum: 1, description: `Default ${DEFAULT_SHELL_TIMEOUT_S}.` },
    },
    required: ['command'],
    additionalProperties: false,
  },
  async run(args, ctx) {
    const command = str(args, 'command', true);
    if (!command.trim()) throw new ToolArgumentError('`command` is empty');
    const timeoutS = int(args, 'timeout_seconds', 1) ?? DEFAULT_SHELL_TIMEOUT_S;
    return runShell(command, timeoutS * 1000, ctx);
  },
};

/** Runs a command in its own process group; the group is killed at the timeout or when the agent stops. */
export function runShell(command: string, timeoutMs: number, ctx: ToolContext): Promise<ToolOutcome> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: ctx.cwd,
      env: ctx.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: string[] = [];
    let size = 0;
    let dropped = 0;
    const take = (b: Buffer) => {
      // keep the first and the last part of a flood; what is between is counted
      if (size < MAX_TOOL_OUTPUT * 2) {
        chunks.push(b.toString('utf8'));
        size += b.length;
      } else dropped += b.length;
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    // a killed command may reset its pipes: what was read is kept
    child.stdout.on('error', () => {});
    child.stderr.on('error', () => {});
    let why: string | undefined;
    const kill = (reason: string) => {
      why ??= reason;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => kill(`timed out after ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
    const onAbort = () => kill('was stopped with the agent');
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(fail(`the shell could not be started: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      let output = clipText(chunks.join(''));
      if (dropped) output += `\n[… ${dropped} more bytes not kept …]`;
      const exitCode = code ?? null;
      const status = why ? `command ${why}` : signal ? `command ended by ${signal}` : `exit code ${exitCode}`;
      resolve({
        ok: !why && exitCode === 0,
        text: `${status}\n${output}`,
        output: { output, exit_code: exitCode, ...(why ? { error: `command ${why}` } : {}) },
      });
    });
  });
}

const readFileTool: ToolSpec = {
  name: 'read_file',
  category: 'files',
  description: 'Read a text file. Optional 1-based `offset` line and `limit` of lines.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string' },
      offset: { type: 'integer', minimum: 1 },
      limit: { type: 'integer', minimum: 1 },
    },
    required: ['path'],
    additionalProperties: false,
  },
  async run(args, ctx) {
    const p = str(args, 'path', true);
    const offset = int(args, 'offset', 1);
    const limit = int(args, 'limit', 1);
    let text: string;
    try {
      const info = await stat(target(ctx, p));
      if (info.isDirectory()) return fail(`${p}: is a directory (use list_directory)`);
      if (info.size > MAX_READ * 8 && offset === undefined && limit === undefined)
        return fail(`${p}: ${info.size} bytes is too large to read whole; read a range with offset and limit`);
      text = await readFile(target(ctx, p), 'utf8');
    } catch (err) {
      return fsError(err, p);
    }
    if (offset !== undefined || limit !== undefined) {
      const lines = text.split('\n');
      const start = (offset ?? 1) - 1;
      text = lines.slice(start, limit !== undefined ? start + limit : undefined).join('\n');
    }
    const content = clipText(text, MAX_READ);
    return { ok: true, text: content, output: { path: p, bytes: Buffer.byteLength(text) } };
  },
};

const writeFileTool: ToolSpec = {
  name: 'write_file',
  category: 'files',
  description: 'Write a file (created with its directories, or replaced).',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
    additionalProperties: false,
  },
  async run(args, ctx) {
    const p = str(args, 'path', true);
    const content = str(args, 'content', true);
    const file = target(ctx, p);
    try {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, content);
    } catch (err) {
      return fsError(err, p);
    }
    const bytes = Buffer.byteLength(content);
    return { ok: true, text: `wrote ${bytes} bytes to ${p}`, output: { path: p, bytes } };
  },
};

const editFileTool: ToolSpec = {
  name: 'edit_file',
  category: 'files',
  description:
    'Replace `old_text` with `new_text` in a file. `old_text` must occur exactly once unless `replace_all` is true.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string' },
      old_text: { type: 'string' },
      new_text: { type: 'string' },
      replace_all: { type: 'boolean' },
    },
    required: ['path', 'old_text', 'new_text'],
    additionalProperties: false,
  },
  async run(args, ctx) {
    const p = str(args, 'path', true);
    const oldText = str(args, 'old_text', true);
    const newText = str(args, 'new_text', true);
    const all = bool(args, 'replace_all');
    if (oldText === '') throw new ToolArgumentError('`old_text` must not be empty');
    const file = target(ctx, p);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      return fsError(err, p);
    }
    const count = text.split(oldText).length - 1;
    if (count === 0) return fail(`${p}: old_text was not found`);
    if (count > 1 && !all)
      return fail(`${p}: old_text occurs ${count} times; make it unique or set replace_all`, { occurrences: count });
    const next = all ? text.split(oldText).join(newText) : text.replace(oldText, () => newText);
    try {
      // a rename, so a reader never sees half a file
      const tmp = `${file}.agentyard-edit-${process.pid}`;
      await writeFile(tmp, next);
      await rename(tmp, file);
    } catch (err) {
      return fsError(err, p);
    }
    return {
      ok: true,
      text: `replaced ${all ? count : 1} occurrence(s) in ${p}`,
      output: { path: p, replaced: all ? count : 1 },
    };
  },
};

const MAX_LIST = 1000;

const listDirectory: ToolSpec = {
  name: 'list_directory',
  category: 'search',
  description: 'List a directory: one entry a line, directories ending in /. Default: the working directory.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' } },
    additionalProperties: false,
  },
  async run(args, ctx) {
    const p = str(args, 'path', false) ?? '.';
    let entries;
    try {
      entries = await readdir(target(ctx, p), { withFileTypes: true });
    } catch (err) {
      return fsError(err, p);
    }
    const names = entries
      .map((e) => (e.isDirectory() ? `${e.name}/` : e.isSymbolicLink() ? `${e.name}@` : e.name))
      .sort();
    const shown = names.slice(0, MAX_LIST);
    const more = names.length - shown.length;
    return {
      ok: true,
      text: `${shown.join('\n')}${more > 0 ? `\n[… ${more} more entries …]` : ''}`,
      output: { path: p, entries: names.length },
    };
  },
};

export const BUILT_IN_TOOLS: readonly ToolSpec[] = [shell, readFileTool, writeFileTool, editFileTool, listDirectory];
