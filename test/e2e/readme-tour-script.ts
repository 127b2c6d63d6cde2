/**
 * Reads the five-minute tour out of README.md, so that the tests replay exactly what a reader copies: the
 * server's environment, the shell block, the files it writes (heredocs and printf one-liners, grouped by the
 * commit that takes them), the JSON bodies it sends, and the outputs its comments promise.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const README = path.join(ROOT, 'README.md');

const SECTION_START = '## A five-minute tour';

export interface TourFile {
  path: string;
  content: string;
  /** An unquoted heredoc: the shell expands `$NAME` in it. */
  expands: boolean;
}

export interface TourCommit {
  message: string;
  /** Files written since the previous commit, in order. */
  files: TourFile[];
}

export interface TourRequest {
  /** The URL as written (`"$AY/api/v1/secrets/ci-webhook"`, `"$INGRESS"`). */
  url: string;
  method: string;
  body: unknown;
  headers: Record<string, string>;
}

export interface Tour {
  /** The section of README.md, from its heading to the next `##`. */
  section: string;
  /** The command that starts the server (first shell block). */
  serverCommand: string;
  /** `NAME=value` assignments before `npm start`, with `$PWD` as the repository root. */
  serverEnv: Record<string, string>;
  /** The reader's shell block, verbatim. */
  script: string;
  commits: TourCommit[];
  requests: TourRequest[];
  /** The text after `# ` of every comment in the script (whole-line and trailing ones). */
  comments: string[];
}

function shellBlocks(section: string): string[] {
  const blocks: string[] = [];
  const re = /```sh\n([\s\S]*?)```/g;
  for (let m = re.exec(section); m; m = re.exec(section)) blocks.push(m[1]!);
  return blocks;
}

/** `printf 'fmt' > file`: the tour's printf formats hold only `\n` escapes. */
function printfContent(format: string): string {
  if (format.includes('%') || /\\[^n]/.test(format))
    throw new Error(`README tour: printf format ${format} holds escapes the tests do not read`);
  return format.replaceAll('\\n', '\n');
}

/** Lines joined where they end in a backslash (one logical command per entry). */
function logicalLines(script: string): string[] {
  return script.replace(/\\\n\s*/g, ' ').split('\n');
}

function parseRequests(script: string): TourRequest[] {
  const requests: TourRequest[] = [];
  for (const line of logicalLines(script)) {
    for (const command of line.split(/\$\(|\|/)) {
      if (!/^\s*curl /.test(command)) continue;
      const body = /-d '([^']*)'/.exec(command)?.[1];
      const url = /curl [^"]*"(\$[A-Z]+[^"]*)"/.exec(command)?.[1];
      if (!url) continue;
      const method = /-X ([A-Z]+)/.exec(command)?.[1] ?? (body !== undefined ? 'POST' : 'GET');
      const headers: Record<string, string> = {};
      for (const h of command.matchAll(/-H '([^':]+): ([^']*)'/g)) headers[h[1]!.toLowerCase()] = h[2]!;
      requests.push({ url, method, body: body === undefined ? undefined : (JSON.parse(body) as unknown), headers });
    }
  }
  return requests;
}

function parseCommits(script: string): TourCommit[] {
  const lines = script.split('\n');
  const commits: TourCommit[] = [];
  let pending: TourFile[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^cat > (\S+) <<('?)EOF\2$/.exec(line);
    if (heredoc) {
      const body: string[] = [];
      for (i++; lines[i] !== 'EOF'; i++) {
        if (i >= lines.length) throw new Error(`README tour: the heredoc of ${heredoc[1]} never ends`);
        body.push(lines[i]!);
      }
      pending.push({ path: heredoc[1]!, content: `${body.join('\n')}\n`, expands: heredoc[2] === '' });
      continue;
    }
    const printf = /printf (?:-- )?'([^']*)' > (\S+)/.exec(line);
    if (printf) pending.push({ path: printf[2]!, content: printfContent(printf[1]!), expands: false });
    const commit = /git (?:add -A && git )?commit -qa?m "([^"]*)"/.exec(line);
    if (commit) {
      commits.push({ message: commit[1]!, files: pending });
      pending = [];
    }
  }
  if (pending.length)
    throw new Error(`README tour: ${pending.map((f) => f.path).join(', ')} written but never committed`);
  return commits;
}

/** Where a shell comment starts in a line: a `#` after whitespace (or at the start), outside quotes; -1 if none. */
function commentStart(line: string): number {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = undefined;
      else if (ch === '\\' && quote === '"') i++;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '\\') i++;
    else if (ch === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return i;
  }
  return -1;
}

function parseComments(script: string): string[] {
  const comments: string[] = [];
  let inHeredoc = false;
  for (const line of script.split('\n')) {
    if (inHeredoc) {
      inHeredoc = line !== 'EOF';
      continue;
    }
    if (/<<'?EOF'?$/.test(line)) inHeredoc = true;
    const at = commentStart(line);
    if (at >= 0) comments.push(line.slice(at).replace(/^#\s?/, ''));
  }
  return comments;
}

export function readTour(file = README): Tour {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(SECTION_START);
  if (start < 0) throw new Error(`README.md has no "${SECTION_START}" section`);
  const next = text.indexOf('\n## ', start + SECTION_START.length);
  const section = text.slice(start, next < 0 ? undefined : next);
  const [serverBlock, script] = shellBlocks(section);
  if (!serverBlock || !script)
    throw new Error('README tour: expected a shell block that starts the server, then the tour');
  const serverCommand = serverBlock.trim();
  const serverEnv: Record<string, string> = {};
  for (const m of serverCommand.matchAll(/([A-Z_]+)=(\S+)/g)) serverEnv[m[1]!] = m[2]!.replaceAll('$PWD', ROOT);
  return {
    section,
    serverCommand,
    serverEnv,
    script,
    commits: parseCommits(script),
    requests: parseRequests(script),
    comments: parseComments(script),
  };
}

/** A file's content as the shell writes it: `$NAME` replaced in an unquoted heredoc. */
export function expand(file: TourFile, vars: Record<string, string>): string {
  if (!file.expands) return file.content;
  return file.content.replace(/\$([A-Z_]+)/g, (_all, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new Error(`README tour: ${file.path} uses $${name}, which the test does not know`);
    return value;
  });
}

/**
 * An output as the README's comments show it: commit hashes and resource ids elided with `…`, the server's
 * address as the tour's `http://localhost:8080`.
 */
export function asShown(output: string, serverUrl?: string): string {
  let text = output.trim();
  if (serverUrl) text = text.replaceAll(serverUrl, 'http://localhost:8080');
  return text.replace(/\b[0-9a-f]{40}\b/g, '…').replace(/\b(wh|dlv|run|auto|fac|apl)_[0-9a-z]{26}\b/g, '$1_…');
}
