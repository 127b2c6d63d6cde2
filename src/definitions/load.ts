import { lstat, readFile, readdir } from 'node:fs/promises';
import type { SchemaKind } from './schemas.ts';
import { join } from 'node:path';
import type { DiagnosticCode } from './codes.ts';
import type { Diagnostic } from './diagnostic.ts';

/** One file of a factory tree as read from disk, git or an API request. Paths are relative, `/`-separated. */
export interface FactoryFileInput {
  path: string;
  content: string;
  /** A symbolic link in the source tree: never followed, never a resource. */
  symlink?: boolean;
}

/** The kinds of factory file: those with a schema, and skills. */
export type FileKind = SchemaKind | 'skill' | 'agent-skill';

export interface ClassifiedFile {
  path: string;
  content: string;
  kind: FileKind;
  /** Resource name from the path (directory or file stem); the skill directory for skills. */
  name: string;
  /** The agent of an agent skill, the suite of a benchmark task. */
  owner?: string;
}

export interface LoadedTree {
  files: ClassifiedFile[];
  diagnostics: Diagnostic[];
}

/** Resource names: letters, digits, `.`, `_`, `-`; starting with a letter or digit; at most 64 characters. */
export const RESOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Bigger files are refused before parsing (the product's client applies the same cap). */
export const MAX_FILE_BYTES = 256 * 1024;

export const TOP_DIRECTORIES = new Set([
  'agents',
  'automations',
  'runners',
  'scorers',
  'skills',
  'webhooks',
  'benchmarks',
]);

const IGNORED_BASENAME = /^(readme|changelog|license|contributing)(\.[A-Za-z0-9]+)?$/i;

type Classification = { kind: FileKind; name: string; owner?: string } | { unsupported: string } | { ignore: true };

const ignore: Classification = { ignore: true };

function stem(base: string): string {
  return base.replace(/\.(ya?ml|md)$/, '');
}

/** Flat `<dir>/<name>.yaml` resources (runners, webhooks). */
function flatYaml(segments: string[], kind: FileKind, what: string): Classification {
  const base = segments[segments.length - 1]!;
  const isYaml = /\.ya?ml$/.test(base);
  if (!isYaml) return ignore;
  const canonical = `${segments[0]}/<name>.yaml`;
  if (segments.length !== 2) return { unsupported: `${what} files live at ${canonical}; subdirectories are not read` };
  if (base.endsWith('.yml')) return { unsupported: `${what} files use the .yaml extension (${canonical})` };
  return { kind, name: stem(base) };
}

function classify(path: string): Classification {
  const segments = path.split('/');
  if (segments.some((s) => s.startsWith('.') || s === '')) return ignore;
  const base = segments[segments.length - 1]!;
  if (segments.length === 1) {
    if (base === 'factory.yaml') return { kind: 'factory', name: 'factory' };
    if (base === 'factory.yml') return { unsupported: 'the factory file is factory.yaml (.yml is not read)' };
    return ignore;
  }
  if (IGNORED_BASENAME.test(base)) return ignore;
  const [top] = segments;
  const n = segments.length;
  switch (top) {
    case 'agents':
      if (n >= 5 && segments[2] === 'skills' && base === 'SKILL.md')
        return { kind: 'agent-skill', name: segments[n - 2]!, owner: segments[1]! };
      if (n === 3 && base === 'agent.md') return { kind: 'agent', name: segments[1]! };
      if (base === 'agent.md' || (n === 2 && base.endsWith('.md')))
        return { unsupported: 'an agent lives at agents/<name>/agent.md' };
      return ignore;
    case 'automations':
      if (n === 3 && base === 'automation.md') return { kind: 'automation', name: segments[1]! };
      if (n === 2 && base.endsWith('.md')) return { kind: 'automation', name: stem(base) };
      if (base === 'automation.md') return { unsupported: 'an automation lives at automations/<name>/automation.md' };
      return ignore;
    case 'scorers':
      if (n === 3 && base === 'scorer.md') return { kind: 'scorer', name: segments[1]! };
      if (base === 'scorer.md' || (n === 2 && base.endsWith('.md')))
        return { unsupported: 'a scorer lives at scorers/<name>/scorer.md' };
      return ignore;
    case 'runners':
      return flatYaml(segments, 'runner', 'runner');
    case 'webhooks':
      return flatYaml(segments, 'webhook', 'webhook');
    case 'skills':
      if (n >= 3 && base === 'SKILL.md') return { kind: 'skill', name: segments[n - 2]! };
      return ignore;
    case 'benchmarks': {
      if (!/\.ya?ml$/.test(base)) return ignore;
      const yml = base.endsWith('.yml');
      if (n === 3 && stem(base) === 'suite') {
        return yml
          ? { unsupported: 'a suite file is benchmarks/<suite>/suite.yaml' }
          : { kind: 'benchmark-suite', name: segments[1]! };
      }
      if (n === 4 && segments[2] === 'tasks') {
        return yml
          ? { unsupported: 'task files use the .yaml extension' }
          : { kind: 'benchmark-task', name: stem(base), owner: segments[1]! };
      }
      return {
        unsupported: 'benchmark files live at benchmarks/<suite>/suite.yaml and benchmarks/<suite>/tasks/<task>.yaml',
      };
    }
    default:
      return ignore;
  }
}

function problem(file: string, code: DiagnosticCode, message: string): Diagnostic {
  return { file, line: 1, column: 1, path: '', code, message, severity: 'error' };
}

/** Sorts the files of a tree into resource kinds, reporting files at places the format does not read. */
export function loadFactoryFiles(inputs: readonly FactoryFileInput[]): LoadedTree {
  const diagnostics: Diagnostic[] = [];
  const files: ClassifiedFile[] = [];
  const seenPaths = new Set<string>();
  const automations = new Map<string, string>();
  let hasFactory = false;

  for (const input of [...inputs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const path = input.path.replace(/\\/g, '/').replace(/^\.\//, '');
    if (seenPaths.has(path)) {
      diagnostics.push(problem(path, 'FF_DUPLICATE_PATH', 'the same path appears twice in the input'));
      continue;
    }
    seenPaths.add(path);
    if (
      input.symlink &&
      !path.split('/').some((s) => s.startsWith('.')) &&
      (path === 'factory.yaml' || TOP_DIRECTORIES.has(path.split('/')[0]!))
    ) {
      diagnostics.push(
        problem(
          path,
          'FF_UNSUPPORTED_PATH',
          'is a symbolic link, which is never followed; resource files and directories must be real',
        ),
      );
      continue;
    }
    const c = classify(path);
    if ('ignore' in c) continue;
    if ('unsupported' in c) {
      diagnostics.push(problem(path, 'FF_UNSUPPORTED_PATH', `not read: ${c.unsupported}`));
      continue;
    }
    if (c.kind === 'factory') hasFactory = true;
    const isSkill = c.kind === 'skill' || c.kind === 'agent-skill';
    if (!isSkill) {
      const names = c.owner !== undefined && c.kind === 'benchmark-task' ? [c.owner, c.name] : [c.name];
      const bad = names.find((name) => !RESOURCE_NAME.test(name));
      if (c.kind !== 'factory' && bad !== undefined) {
        diagnostics.push(
          problem(
            path,
            'FF_UNSUPPORTED_PATH',
            `resource name \`${bad}\` must be 1-64 letters, digits, \`.\`, \`_\` or \`-\`, starting with a letter or digit`,
          ),
        );
        continue;
      }
      if (Buffer.byteLength(input.content, 'utf8') > MAX_FILE_BYTES) {
        diagnostics.push(problem(path, 'FF_LIMIT_EXCEEDED', `the file is larger than ${MAX_FILE_BYTES / 1024} KiB`));
        continue;
      }
    }
    if (c.kind === 'automation') {
      const other = automations.get(c.name);
      if (other !== undefined) {
        const flat = path.split('/').length === 2 ? path : other;
        const dir = flat === path ? other : path;
        diagnostics.push(
          problem(
            flat,
            'FF_DUPLICATE_PATH',
            `automation \`${c.name}\` is also declared at ${dir}; keep one of the two forms`,
          ),
        );
        const index = files.findIndex((f) => f.path === flat);
        if (index >= 0) files.splice(index, 1);
        if (flat === path) continue;
      }
      automations.set(c.name, path);
    }
    files.push({
      path,
      content: input.content,
      kind: c.kind,
      name: c.name,
      ...(c.owner !== undefined ? { owner: c.owner } : {}),
    });
  }
  if (!hasFactory)
    diagnostics.push(problem('factory.yaml', 'FF_MISSING_FACTORY', 'no factory.yaml at the root of the factory tree'));
  return { files, diagnostics };
}

const SKIPPED_DIRECTORIES = new Set(['node_modules']);

/**
 * Reads the files of a factory tree from disk. Only the root and the resource directories are read;
 * hidden entries are skipped and symbolic links are reported, never followed.
 */
export async function readFactoryDir(dir: string): Promise<FactoryFileInput[]> {
  const out: FactoryFileInput[] = [];
  const pending: Promise<void>[] = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(relative ? join(dir, relative) : dir, { withFileTypes: true });
    const children: Promise<void>[] = [];
    for (const entry of entries) {
      if (entry.name.startsWith('.') || SKIPPED_DIRECTORIES.has(entry.name)) continue;
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (!relative && entry.isDirectory() && !TOP_DIRECTORIES.has(entry.name)) continue;
      if (entry.isSymbolicLink()) {
        out.push({ path, content: '', symlink: true });
      } else if (entry.isDirectory()) {
        children.push(walk(path));
      } else if (entry.isFile()) {
        if (!relative && !/\.(ya?ml|md)$/.test(entry.name)) continue;
        pending.push(
          readFile(join(dir, path), 'utf8').then((content) => {
            out.push({ path, content });
          }),
        );
      }
    }
    await Promise.all(children);
  };
  const stats = await lstat(dir);
  if (!stats.isDirectory()) throw new Error(`${dir} is not a directory`);
  await walk('');
  await Promise.all(pending);
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
