/**
 * Each domain writes only its own tables (docs/architecture.md, "Tables and their owners"). The owner of each
 * table is the data below; the test reads every source file of src/ (store/ aside) for the tables its SQL
 * writes (INSERT INTO, UPDATE, DELETE FROM, TRUNCATE, MERGE INTO), and every import of another folder's SQL
 * module for the write functions it calls, and fails when a folder writes a table it does not own: such a
 * write goes through the owning domain's service. SHARED lists the writes kept on purpose, with the reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');

/** Table → the folder of src/ that owns it (creates its rows, changes and deletes them). */
const OWNERS: Readonly<Record<string, string>> = {
  teams: 'identity',
  principals: 'identity',
  api_keys: 'identity',
  agent_identities: 'identity',
  instance_settings: 'identity',
  runs: 'engine',
  run_events: 'engine',
  run_followups: 'runs',
  run_attachments: 'runs',
  run_idempotency_keys: 'runs',
  run_artifact_files: 'runs',
  run_questions: 'runs',
  run_threads: 'runs',
  run_tokens: 'execution',
  executions: 'engine',
  executor_processes: 'execution',
  worker_connections: 'workers',
  worker_tokens: 'workers',
  factories: 'factories',
  factory_applies: 'factories',
  factory_files: 'factories',
  factory_refused_files: 'factories',
  webhooks: 'factories',
  automations: 'factories',
  automation_webhook_triggers: 'factories',
  automation_provider_triggers: 'factories',
  managed_commits: 'sources',
  webhook_deliveries: 'ingress',
  webhook_rate_limits: 'ingress',
  automation_firings: 'automations',
  schedules: 'schedules',
  schedule_fires: 'schedules',
  secrets: 'secrets',
  integration_connections: 'integrations',
  integration_identities: 'integrations',
  github_installations: 'integrations',
  integration_jobs: 'integrations',
  kubernetes_factories: 'operator',
  kubernetes_namespaces: 'operator',
  kubernetes_run_jobs: 'operator',
  scoring_cursors: 'scoring',
  scoring_jobs: 'scoring',
  run_scores: 'scoring',
  scorer_improvement_runs: 'scoring',
  benchmark_runs: 'scoring',
  benchmark_results: 'scoring',
  factory_run_tallies: 'metrics',
  factory_run_totals: 'metrics',
};

interface SharedWrite {
  table: string;
  folder: string;
  why: string;
}

/** Writes by a folder to a table it does not own, kept on purpose. A new one needs a reason as good. */
const SHARED: readonly SharedWrite[] = [
  {
    table: 'run_followups',
    folder: 'engine',
    why: 'a start (ay_start_executions) consumes the follow-ups its prompt carries, in the statement that starts the execution',
  },
  {
    table: 'run_artifact_files',
    folder: 'execution',
    why: 'the recorder stores the files of reported artifacts in the transaction that adds them to the run',
  },
  {
    table: 'run_followups',
    folder: 'execution',
    why: 'a start consumes the follow-ups its prompt carries, in the statement that starts the execution',
  },
  {
    table: 'worker_connections',
    folder: 'execution',
    why: 'the reaper marks the connections of a lost server process disconnected when it gives their leases back',
  },
  {
    table: 'webhook_deliveries',
    folder: 'automations',
    why: 'the outbox evaluator marks the deliveries it evaluated (outbox_pending, evaluated_at) with their firings',
  },
  {
    table: 'webhook_deliveries',
    folder: 'integrations',
    why: "a job fetching a pull request's changed files puts its delivery back in the outbox, in the transaction that ends the job",
  },
  {
    table: 'automation_firings',
    folder: 'ingress',
    why: 'retention deletes the firings of the deliveries it purges, in the same statement',
  },
  {
    table: 'integration_connections',
    folder: 'automations',
    why: 'provider events record the last events of a connection in the evaluator transaction',
  },
  {
    table: 'github_installations',
    folder: 'automations',
    why: 'a GitHub delivery records its installation in the evaluator transaction',
  },
];

const WRITE =
  /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|MERGE\s+INTO)\s+(?:ONLY\s+)?([a-z_][a-z0-9_]*)/g;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return /\.(ts|sql)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const folderOf = (file: string): string => path.relative(src, file).split(path.sep)[0]!;
const isSqlModule = (file: string): boolean => /\/sql\.ts$|\/functions\.sql$/.test(file);

/** Source text without comments (JSDoc and `//` lines, SQL `--` comments). */
function code(text: string): string {
  return text
    .replace(/^\s*\/\*[\s\S]*?\*\//gm, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .replace(/--[^\n'`]*$/gm, '');
}

function tablesWritten(text: string): string[] {
  return [...code(text).matchAll(WRITE)].map((m) => m[1]!).filter((t) => t in OWNERS);
}

/** The tables the migrations leave: each created one, under the name its last rename gave it. */
function migrationTables(): string[] {
  const dir = path.join(src, 'store', 'migrations');
  const tables = new Set<string>();
  const statements =
    /CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?([a-z_]+)|ALTER TABLE (?:IF EXISTS )?([a-z_]+) RENAME TO ([a-z_]+)/g;
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()) {
    for (const m of readFileSync(path.join(dir, file), 'utf8').matchAll(statements)) {
      if (m[1]) tables.add(m[1]);
      else if (tables.delete(m[2]!)) tables.add(m[3]!);
    }
  }
  return [...tables];
}

/** The exported functions of a SQL module and the tables each writes (through its own statements or helpers). */
function writeFunctions(file: string): Map<string, string[]> {
  const text = code(readFileSync(file, 'utf8'));
  const blocks = new Map<string, { exported: boolean; body: string }>();
  const starts = [...text.matchAll(/^(export\s+)?(?:async\s+)?(?:function\*?\s+|const\s+)(\w+)/gm)];
  starts.forEach((m, i) => {
    const end = starts[i + 1]?.index ?? text.length;
    blocks.set(m[2]!, { exported: Boolean(m[1]), body: text.slice(m.index, end) });
  });
  const direct = (body: string) => tablesWritten(body);
  const out = new Map<string, string[]>();
  for (const [name, block] of blocks) {
    if (!block.exported) continue;
    const tables = new Set(direct(block.body));
    // one level of the module's own helpers
    for (const [helper, b] of blocks)
      if (helper !== name && new RegExp(`\\b${helper}\\(`).test(block.body))
        for (const t of direct(b.body)) tables.add(t);
    if (tables.size) out.set(name, [...tables]);
  }
  return out;
}

interface Write {
  folder: string;
  table: string;
  where: string;
}

/** Calls from a file to write functions of another folder's SQL module. */
function importedWrites(file: string, modules: Map<string, Map<string, string[]>>): Write[] {
  const text = code(readFileSync(file, 'utf8'));
  const out: Write[] = [];
  const target = (spec: string) => path.resolve(path.dirname(file), spec);
  const record = (module: string, name: string) => {
    for (const table of modules.get(module)?.get(name) ?? [])
      out.push({ folder: folderOf(file), table, where: `${path.relative(root, file)} calls ${name}` });
  };
  for (const m of text.matchAll(/import\s+(?!type\b)\{([^}]*)\}\s+from\s+'([^']+)'/g)) {
    const module = target(m[2]!);
    if (!modules.has(module) || folderOf(module) === folderOf(file)) continue;
    for (const part of m[1]!.split(',')) {
      const name = part.trim().replace(/^type\s+/, '');
      if (name && !part.trim().startsWith('type ')) record(module, name.split(/\s+as\s+/)[0]!);
    }
  }
  for (const m of text.matchAll(/import\s+\*\s+as\s+(\w+)\s+from\s+'([^']+)'/g)) {
    const module = target(m[2]!);
    if (!modules.has(module) || folderOf(module) === folderOf(file)) continue;
    for (const call of text.matchAll(new RegExp(`\\b${m[1]}\\.(\\w+)\\(`, 'g'))) record(module, call[1]!);
  }
  return out;
}

function allWrites(): Write[] {
  const sources = files(src).filter((f) => folderOf(f) !== 'store');
  const modules = new Map(
    sources.filter((f) => f.endsWith('.ts') && isSqlModule(f)).map((f) => [f, writeFunctions(f)]),
  );
  const writes: Write[] = [];
  for (const file of sources) {
    for (const table of tablesWritten(readFileSync(file, 'utf8')))
      writes.push({ folder: folderOf(file), table, where: path.relative(root, file) });
    if (file.endsWith('.ts')) writes.push(...importedWrites(file, modules));
  }
  return writes;
}

describe('tables and their owners', () => {
  it('names an owner folder for every table the migrations create, and no other', () => {
    const tables = [...new Set(migrationTables())].sort();
    expect(Object.keys(OWNERS).sort()).toEqual(tables);
    const folders = new Set(
      readdirSync(src, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name),
    );
    for (const [table, folder] of Object.entries(OWNERS)) expect(folders, `${table}: ${folder}`).toContain(folder);
    for (const s of SHARED) expect(OWNERS[s.table], s.table).toBeDefined();
  });

  it('docs/architecture.md lists the same owners', () => {
    const doc = readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8');
    const section = doc.split('## Tables and their owners')[1]?.split('\n## ')[0] ?? '';
    const listed: Record<string, string> = {};
    for (const m of section.matchAll(/^\| `([a-z_]+)\/` \| (.+) \|$/gm))
      for (const t of m[2]!.matchAll(/`([a-z_]+)`/g)) listed[t[1]!] = m[1]!;
    expect(listed).toEqual(OWNERS);
  });

  it('no folder writes a table it does not own, but for the shared writes listed', () => {
    const writes = allWrites();
    expect(writes.length).toBeGreaterThan(50);
    const shared = (w: Write) => SHARED.some((s) => s.table === w.table && s.folder === w.folder);
    const foreign = writes.filter((w) => OWNERS[w.table] !== w.folder && !shared(w));
    expect(foreign.map((w) => `${w.folder}/ writes ${w.table} (owned by ${OWNERS[w.table]}/): ${w.where}`)).toEqual([]);
    // a shared write that is gone is taken off the list
    const stale = SHARED.filter((s) => !writes.some((w) => w.table === s.table && w.folder === s.folder));
    expect(stale.map((s) => `${s.folder}/ → ${s.table}`)).toEqual([]);
  });

  it('reads the table a statement writes, not a row lock or a comment', () => {
    expect(tablesWritten('await tx.query(`UPDATE  factories SET x = 1`)')).toEqual(['factories']);
    expect(tablesWritten("'INSERT INTO secrets (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET a = 1'")).toEqual([
      'secrets',
    ]);
    expect(tablesWritten('SELECT 1 FROM runs FOR UPDATE SKIP LOCKED -- UPDATE runs')).toEqual([]);
  });
});
