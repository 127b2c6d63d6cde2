/**
 * Scores in the console: a run's judgements (a section of the run page) and an agent's page with its scorers'
 * pass rate per day, drawn as an inline SVG chart with the same numbers in a table beside it.
 */
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export interface RunScore {
  scorer: string;
  label: string | null;
  score: number | null;
  passed: boolean | null;
  reason: string;
  status: 'scored' | 'unscored';
}

export interface ScoreDay {
  day: string;
  factory_id: string;
  agent: string;
  scorer: string;
  samples: number;
  scored: number;
  passed: number;
  pass_rate: number | null;
  mean_score: number | null;
}

const pct = (v: number | null): string => (v === null ? '—' : `${Math.round(v * 100)}%`);

/** The run page's section: one row per scorer. */
export function runScoresSection(scores: readonly RunScore[]): SafeHtml {
  return html`<section aria-labelledby="scores"><h2 id="scores">Scores</h2>
  ${
    scores.length === 0
      ? html`<p class="muted">Not scored (no scorer sampled this run, or its judgement is still queued).</p>`
      : html`<div class="scroll"><table id="run-scores">
    <thead><tr><th scope="col">Scorer</th><th scope="col">Label</th><th scope="col">Score</th><th scope="col">Passed</th><th scope="col">Reason</th></tr></thead>
    <tbody>${scores.map(
      (s) =>
        html`<tr><th scope="row">${s.scorer}</th><td>${s.label ?? html`<span class="muted">unscored</span>`}</td><td>${s.score === null ? '—' : String(s.score)}</td><td>${s.passed === null ? '—' : s.passed ? 'yes' : 'no'}</td><td>${s.reason}</td></tr>`,
    )}</tbody></table></div>`
  }</section>`;
}

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

/** Pass rate per day, one line per scorer (days without a scored sample leave a gap). */
export function passRateChart(days: readonly ScoreDay[]): SafeHtml {
  const dates = [...new Set(days.map((d) => d.day))].sort();
  const scorers = [...new Set(days.map((d) => d.scorer))].sort();
  if (dates.length === 0) return html`<p class="muted">No scores yet.</p>`;
  const w = 640;
  const h = 200;
  const pad = 30;
  const x = (i: number) => pad + (dates.length === 1 ? (w - 2 * pad) / 2 : (i * (w - 2 * pad)) / (dates.length - 1));
  const y = (rate: number) => h - pad - rate * (h - 2 * pad);
  const series = scorers.map((scorer, si) => {
    const points = dates
      .map((day, i) => {
        const d = days.find((e) => e.day === day && e.scorer === scorer);
        return d?.pass_rate === null || d === undefined ? undefined : `${x(i).toFixed(1)},${y(d.pass_rate).toFixed(1)}`;
      })
      .filter((p): p is string => p !== undefined);
    const color = COLORS[si % COLORS.length]!;
    return html`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(' ')}"/>${points.map(
      (p) => {
        const [cx, cy] = p.split(',');
        return html`<circle cx="${cx!}" cy="${cy!}" r="3" fill="${color}"/>`;
      },
    )}<text x="${w - pad + 4}" y="${14 + si * 14}" font-size="11" fill="${color}">${scorer}</text>`;
  });
  return html`<svg role="img" aria-labelledby="pass-rate-title" viewBox="0 0 ${w + 90} ${h}" width="100%" class="chart">
    <title id="pass-rate-title">Pass rate per day by scorer, from ${dates[0]!} to ${dates.at(-1)!}</title>
    <line x1="${pad}" y1="${y(0)}" x2="${w - pad}" y2="${y(0)}" stroke="#999"/>
    <line x1="${pad}" y1="${y(1)}" x2="${w - pad}" y2="${y(1)}" stroke="#ddd"/>
    <text x="2" y="${y(1) + 4}" font-size="10">100%</text><text x="8" y="${y(0) + 4}" font-size="10">0%</text>
    ${series}
  </svg>`;
}

export function agentPage(
  viewer: Viewer,
  data: { factory: { id: string; name: string }; agent: string; days: ScoreDay[] },
): string {
  const { factory, agent, days } = data;
  const body = html`<p class="crumbs"><a href="/console/factories/${factory.id}">${factory.name}</a> / agents /</p>
  <h1>${agent}</h1>
  <p><a href="/console/runs?factory_id=${factory.id}&amp;name=${encodeURIComponent(agent)}">Runs of this agent</a></p>
  <section aria-labelledby="pass-rate"><h2 id="pass-rate">Scorers' pass rate</h2>
  ${passRateChart(days)}
  ${
    days.length
      ? html`<div class="scroll"><table id="agent-scores">
    <thead><tr><th scope="col">Day</th><th scope="col">Scorer</th><th scope="col">Samples</th><th scope="col">Passed</th><th scope="col">Pass rate</th><th scope="col">Mean score</th></tr></thead>
    <tbody>${days.map(
      (d) =>
        html`<tr><th scope="row">${d.day}</th><td>${d.scorer}</td><td>${String(d.samples)}</td><td>${String(d.passed)}</td><td>${pct(d.pass_rate)}</td><td>${d.mean_score === null ? '—' : d.mean_score.toFixed(2)}</td></tr>`,
    )}</tbody></table></div>`
      : ''
  }</section>`;
  return page({ title: `${agent} · ${factory.name}`, viewer, section: 'overview', body });
}

/** Links to the agent pages of a factory, from its definition files (`agents/<name>/agent.md`). */
export function agentLinks(factoryId: string, files: readonly { path: string }[]): SafeHtml {
  const names = files
    .map((f) => /^agents\/([^/]+)\/agent\.md$/.exec(f.path)?.[1])
    .filter((n): n is string => n !== undefined)
    .sort();
  if (names.length === 0) return html``;
  return html`<section aria-labelledby="agents"><h2 id="agents">Agents</h2><ul class="plain">${names.map(
    (n) =>
      html`<li><a href="/console/factories/${encodeURIComponent(factoryId)}/agents/${encodeURIComponent(n)}">${n}</a></li>`,
  )}</ul></section>`;
}
