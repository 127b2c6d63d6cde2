/**
 * Resolving a run's `skill_spec` (`repo:name`, `owner/repo:name`, `owner/repo:path/to/SKILL.md`) to files:
 * from the applied files of the run's factory (or, for a run of no factory, of the team's factories), first
 * the agent's own `agents/<agent>/skills/`, then the shared `skills/`. Skills in other git repositories are
 * not fetched: the run is told the skill could not be resolved.
 */
import path from 'node:path/posix';
import type { Queryable } from '../store/db.ts';
import type { PlanFile, PlanSkill } from './plan.ts';

/** Skill files larger than this in total are not shipped (the run is told why). */
const MAX_SKILL_BYTES = 5 * 1024 * 1024;

export function parseSkillSpec(spec: string): { repo: string; name: string; dir: string | undefined } {
  const colon = spec.indexOf(':');
  const repo = colon > 0 ? spec.slice(0, colon) : '';
  const target = (colon > 0 ? spec.slice(colon + 1) : spec).replace(/^\/+/, '');
  if (/(^|\/)SKILL\.md$/i.test(target)) {
    const dir = path.dirname(target);
    return { repo, name: path.basename(dir === '.' ? repo : dir), dir: dir === '.' ? '' : dir };
  }
  if (target.includes('/')) return { repo, name: path.basename(target), dir: target };
  return { repo, name: target, dir: undefined };
}

interface FactoryRef {
  id: string;
  name: string;
}

export async function resolveSkill(
  q: Queryable,
  run: { team_id: string; factory_id: string | null; automation_id: string | null; config_name: string | null },
  spec: string,
): Promise<PlanSkill> {
  const { name, dir } = parseSkillSpec(spec);
  const factories = run.factory_id
    ? (await q.query<FactoryRef>('SELECT id, name FROM factories WHERE id = $1', [run.factory_id])).rows
    : (await q.query<FactoryRef>('SELECT id, name FROM factories WHERE team_id = $1 AND deleted_at IS NULL ORDER BY name, id', [run.team_id])).rows;
  if (factories.length === 0) {
    return { spec, name, resolved: false, reason: 'the run belongs to no factory, and skills are read from factory files only' };
  }
  let agent: string | undefined;
  if (run.automation_id) {
    agent = (await q.query<{ agent: string | null }>('SELECT agent FROM automations WHERE id = $1', [run.automation_id])).rows[0]?.agent ?? undefined;
  }
  agent ??= run.config_name ?? undefined;
  const dirs = dir !== undefined ? [dir] : [...(agent ? [`agents/${agent}/skills/${name}`] : []), `skills/${name}`];
  for (const factory of factories) {
    for (const candidate of dirs) {
      const prefix = candidate === '' ? '' : `${candidate}/`;
      const found = await q.query<{ path: string }>('SELECT path FROM factory_files WHERE factory_id = $1 AND path = $2', [factory.id, `${prefix}SKILL.md`]);
      if (found.rowCount === 0) continue;
      const files = await q.query<{ path: string; content: string }>(
        `SELECT path, content FROM factory_files WHERE factory_id = $1 AND starts_with(path, $2) ORDER BY path`,
        [factory.id, prefix],
      );
      const planFiles: PlanFile[] = files.rows
        // a skill directory at the root would otherwise take the whole factory
        .filter((f) => candidate !== '' || !f.path.includes('/'))
        .map((f) => ({ path: f.path.slice(prefix.length), content: f.content }));
      const bytes = planFiles.reduce((n, f) => n + Buffer.byteLength(f.content), 0);
      if (bytes > MAX_SKILL_BYTES) {
        return { spec, name, resolved: false, reason: `${prefix}SKILL.md of factory ${factory.name} has ${bytes} bytes of files (limit ${MAX_SKILL_BYTES})` };
      }
      return { spec, name, resolved: true, source: `factory ${factory.name}: ${prefix}SKILL.md`, files: planFiles };
    }
  }
  const looked = dirs.map((d) => `${d ? `${d}/` : ''}SKILL.md`).join(', ');
  return { spec, name, resolved: false, reason: `no ${looked} in factory ${factories.map((f) => f.name).join(', ')}` };
}
