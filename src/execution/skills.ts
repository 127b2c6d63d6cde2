/**
 * Resolving a run's `skill_spec` (`repo:name`, `owner/repo:name`, `owner/repo:path/to/SKILL.md`) to files:
 * from the applied files of the run's factory (or, for a run of no factory, of the team's factories), first
 * the agent's own `agents/<agent>/skills/`, then the shared `skills/`. Skills in other git repositories are
 * not fetched: the run is told the skill could not be resolved.
 */
import path from 'node:path/posix';
import type { Queryable } from '../kernel/db.ts';
import type { AssignmentFile, AssignmentSkill } from './assignment.ts';

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

interface SkillLookup {
  /** Names of the factories looked in, in the order they are looked in. */
  factories: string[];
  /** The skill directories looked for in each factory, in order. */
  dirs: string[];
  /** The first factory (then directory) holding `<dir>/SKILL.md`, with the files under that directory. */
  factory_name: string | null;
  dir: string | null;
  prefix: string | null;
  files: { path: string; content: string }[] | null;
}

/**
 * The whole look-up in one statement (an assignment waits for it before the run starts): the run's factory, or the
 * team's factories by name; the agent (the automation's, else the run's configuration name); the candidate
 * directories (the spec's own, else the agent's `skills/` then the shared one); the first factory and
 * directory holding a SKILL.md, and the files under it.
 */
const LOOKUP = `WITH f AS (
    SELECT id, name, row_number() OVER (ORDER BY name, id) AS ord FROM factories
    WHERE CASE WHEN $1::text IS NULL THEN team_id = $2::text AND deleted_at IS NULL ELSE id = $1::text END
  ), a AS (
    SELECT coalesce((SELECT agent FROM automations WHERE id = $3::text), $4::text) AS agent
  ), d AS (
    SELECT coalesce($5::text[], CASE WHEN coalesce(a.agent, '') <> '' THEN ARRAY['agents/' || a.agent || '/skills/' || $6::text, 'skills/' || $6::text]
      ELSE ARRAY['skills/' || $6::text] END) AS dirs FROM a
  ), c AS (
    SELECT x.dir, x.ord, CASE WHEN x.dir = '' THEN '' ELSE x.dir || '/' END AS prefix FROM d, unnest(d.dirs) WITH ORDINALITY AS x(dir, ord)
  ), hit AS (
    SELECT f.id, f.name, c.dir, c.prefix FROM f CROSS JOIN c
    WHERE EXISTS (SELECT 1 FROM factory_files ff WHERE ff.factory_id = f.id AND ff.path = c.prefix || 'SKILL.md')
    ORDER BY f.ord, c.ord LIMIT 1
  )
  SELECT (SELECT coalesce(json_agg(f.name ORDER BY f.ord), '[]'::json) FROM f) AS factories, (SELECT dirs FROM d) AS dirs,
    h.name AS factory_name, h.dir, h.prefix,
    (SELECT coalesce(json_agg(json_build_object('path', ff.path, 'content', ff.content) ORDER BY ff.path), '[]'::json)
      FROM factory_files ff WHERE ff.factory_id = h.id AND starts_with(ff.path, h.prefix)) AS files
  FROM (SELECT 1) AS one LEFT JOIN hit h ON true`;

export async function resolveSkill(
  q: Queryable,
  run: { team_id: string; factory_id: string | null; automation_id: string | null; config_name: string | null },
  spec: string,
): Promise<AssignmentSkill> {
  const { name, dir } = parseSkillSpec(spec);
  const found = (
    await q.query<SkillLookup>(LOOKUP, [
      run.factory_id,
      run.team_id,
      run.automation_id,
      run.config_name,
      dir !== undefined ? [dir] : null,
      name,
    ])
  ).rows[0]!;
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
