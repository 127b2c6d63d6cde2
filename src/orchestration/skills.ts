/**
 * Skills an agent can read through the factory interface (`read_skill`) and that `GET /api/v1/agent/skills`
 * lists: the factories' own (`skills/<name>/SKILL.md`, `agents/<agent>/skills/<name>/SKILL.md`) and the
 * skills bundled in the package (`src/orchestration/skills/<id>/SKILL.md`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { FactoryDefinition, SkillFile } from '../definitions/model.ts';

const BUNDLED_DIR = path.join(import.meta.dirname, 'skills');

export interface BundledSkill {
  id: string;
  /** The `description` of its front matter. */
  description: string;
  text: string;
}

let bundled: BundledSkill[] | undefined;

function frontMatterDescription(text: string): string {
  const match = /^---\n([\s\S]*?)\n---/.exec(text);
  const line = match?.[1]?.split('\n').find((l) => l.startsWith('description:'));
  return line
    ? line
        .slice('description:'.length)
        .trim()
        .replace(/^["']|["']$/g, '')
    : '';
}

/** The bundled skills, read once. */
export function bundledSkills(): readonly BundledSkill[] {
  bundled ??= readdirSync(BUNDLED_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => {
      const text = readFileSync(path.join(BUNDLED_DIR, d.name, 'SKILL.md'), 'utf8');
      return { id: d.name, description: frontMatterDescription(text), text };
    })
    .sort((a, b) => a.id.localeCompare(b.id));
  return bundled;
}

export type FoundSkill =
  | { kind: 'bundled'; name: string; source: string; text: string }
  | { kind: 'factory'; name: string; path: string; source: string; text: string };

/** A factory's skills: the shared ones, then each agent's own. */
export function factorySkills(definition: FactoryDefinition): { skill: SkillFile; agent: string | null }[] {
  return [
    ...definition.skills.map((skill) => ({ skill, agent: null })),
    ...definition.agents.flatMap((a) => a.skills.map((skill) => ({ skill, agent: a.name }))),
  ];
}

/**
 * A skill by name (`triage`), by a run's skill spec (`repo:triage`), or by its path (`skills/triage/SKILL.md`):
 * first the factories' (the caller's agent's own before the shared ones), then a bundled skill by its id.
 */
export function findSkill(
  factories: readonly { name: string; definition: FactoryDefinition | null }[],
  skill: string,
  agent: string | null,
): FoundSkill | undefined {
  const target = skill.includes(':') ? skill.slice(skill.indexOf(':') + 1) : skill;
  const wanted = target.replace(/^\/+/, '').replace(/\/SKILL\.md$/i, '');
  for (const factory of factories) {
    if (!factory.definition) continue;
    const skills = factorySkills(factory.definition).sort(
      (a, b) => Number(b.agent === agent) - Number(a.agent === agent),
    );
    const hit = skills.find(
      ({ skill: s }) => s.name === wanted || s.path === target || s.path.replace(/\/SKILL\.md$/i, '') === wanted,
    );
    if (hit)
      return {
        kind: 'factory',
        name: hit.skill.name,
        path: hit.skill.path,
        source: `factory ${factory.name}: ${hit.skill.path}`,
        text: hit.skill.content,
      };
  }
  const found = bundledSkills().find((b) => b.id === wanted);
  return found ? { kind: 'bundled', name: found.id, source: `bundled: ${found.id}`, text: found.text } : undefined;
}
