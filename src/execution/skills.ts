/**
 * Resolving a run's `skill_spec` (`repo:name`, `owner/repo:name`, `owner/repo:path/to/SKILL.md`) to files:
 * from the applied files of the run's factory (or, for a run of no factory, of the team's factories), first
 * the agent's own `agents/<agent>/skills/`, then the shared `skills/`. Skills in other git repositories are
 * not fetched: the run is told the skill could not be resolved.
 */
import path from 'node:path/posix';
import type { Queryable } from '../kernel/db.ts';
import type { AssignmentFile, AssignmentSkill } from './assignment.ts';
import { lookUpSkill } from './sql.ts';

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

export async function resolveSkill(
  q: Queryable,
  run: { team_id: string; factory_id: string | null; automation_id: string | null; config_name: string | null },
  spec: string,
): Promise<AssignmentSkill> {
  const { name, dir } = parseSkillSpec(spec);
  const found = await lookUpSkill(q, run, dir !== undefined ? [dir] : null, name);
  if (found.factories.length === 0) {
    return {
      spec,
      name,
      resolved: false,
      reason: 'the run belongs to no factory, and skills are read from factory files only',
    };
  }
  const dirs = found.dirs;
  if (found.factory_name !== null && found.prefix !== null) {
    const { prefix, dir: candidate } = found;
    const assignmentFiles: AssignmentFile[] = (found.files ?? [])
      // a skill directory at the root would otherwise take the whole factory
      .filter((f) => candidate !== '' || !f.path.includes('/'))
      .map((f) => ({ path: f.path.slice(prefix.length), content: f.content }));
    const bytes = assignmentFiles.reduce((n, f) => n + Buffer.byteLength(f.content), 0);
    if (bytes > MAX_SKILL_BYTES) {
      return {
        spec,
        name,
        resolved: false,
        reason: `${prefix}SKILL.md of factory ${found.factory_name} has ${bytes} bytes of files (limit ${MAX_SKILL_BYTES})`,
      };
    }
    return {
      spec,
      name,
      resolved: true,
      source: `factory ${found.factory_name}: ${prefix}SKILL.md`,
      files: assignmentFiles,
    };
  }
  const looked = dirs.map((d) => `${d ? `${d}/` : ''}SKILL.md`).join(', ');
  return { spec, name, resolved: false, reason: `no ${looked} in factory ${found.factories.join(', ')}` };
}
