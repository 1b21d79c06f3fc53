#!/usr/bin/env node
// One benchmark report from every package's results.
//
//   node tools/scripts/bench-report.mjs          reads bench/results/*.json, writes bench/report.md
//                                               and one SVG chart per group in bench/charts/
//   node tools/scripts/bench-report.mjs --docs   also refreshes docs/benchmarks.md (the committed
//                                               copy of the tables) and its charts in docs/benchmarks/
//
// `npm run bench` runs every package's bench, then this. Each package writes its own JSON shape;
// `normalize` maps the known shapes onto one row model (a measured value, optionally an anchor —
// ripgrep, find, a raw spawn, redis-benchmark, ... — and the ratio between them) and shows any
// other result file as a plain table rather than dropping it. The preferred shape for a new
// benchmark is documented in docs/benchmarks.md.

import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RESULTS_DIR = path.join(REPO_ROOT, 'bench/results');
const REPORT = path.join(REPO_ROOT, 'bench/report.md');
const CHARTS_DIR = path.join(REPO_ROOT, 'bench/charts');
const DOCS_PAGE = path.join(REPO_ROOT, 'docs/benchmarks.md');
const DOCS_CHARTS_DIR = path.join(REPO_ROOT, 'docs/benchmarks');

/** Median of numbers (mean of the middle two for an even count); undefined for none. */
export function median(values) {
  const sorted = values
    .filter((v) => typeof v === 'number' && Number.isFinite(v))
    .sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** A number field that may hold raw samples: samples become their median. */
function numeric(value) {
  if (Array.isArray(value)) return median(value);
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function isScalar(value) {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function environmentOf(json) {
  const m = json.machine ?? json.meta ?? json;
  const parts = [];
  const node = m.node ?? json.node;
  if (node) parts.push(`Node ${node}`);
  const platform = m.platform ?? json.platform;
  if (platform) parts.push(platform);
  if (m.cpus)
    parts.push(
      typeof m.cpus === 'number' ? `${m.cpus} CPUs${m.cpuModel ? ` (${m.cpuModel})` : ''}` : m.cpus,
    );
  if (m.redisServer) parts.push(String(m.redisServer).split(' sha=')[0]);
  if (m.docker) parts.push(`Docker ${m.docker}`);
  return parts.join(', ');
}

function dateOf(json) {
  return json.date ?? json.started ?? json.meta?.date ?? json.machine?.date;
}

function slug(name) {
  return name.replace(/\.json$/, '').replace(/[^A-Za-z0-9_-]+/g, '-');
}

// Top-level objects that describe the run rather than results.
const CONTEXT_KEYS = new Set(['machine', 'meta', 'tree']);

/** Other top-level objects of scalars (e.g. a memory summary) as key/value tables. */
function objectTables(json) {
  return Object.entries(json)
    .filter(([k, v]) => !CONTEXT_KEYS.has(k) && v && typeof v === 'object' && !Array.isArray(v))
    .map(([k, v]) => ({
      title: k,
      columns: ['measure', 'value'],
      rows: Object.entries(v)
        .filter(([, x]) => isScalar(x))
        .map(([name, x]) => [name, typeof x === 'number' ? formatNumber(x) : String(x)]),
    }))
    .filter((t) => t.rows.length > 0);
}

/**
 * `core-acquire-serializer` -> `@sbx/core: acquire-serializer` when `core` is a package directory;
 * result files are named after their package by convention.
 */
export function titleFromName(name, packageDirs) {
  const dir = [...packageDirs]
    .sort((a, b) => b.length - a.length)
    .find((d) => name === d || name.startsWith(`${d}-`));
  if (!dir) return name;
  const rest = name.slice(dir.length + 1);
  return rest ? `@sbx/${dir}: ${rest}` : `@sbx/${dir}`;
}

/** The scalar fields of an object that `used` does not already show, as `k=v` text. */
function restAsNote(row, used) {
  return Object.entries(row)
    .filter(([k, v]) => !used.has(k) && isScalar(v) && v !== '')
    .map(([k, v]) => `${k}=${typeof v === 'number' ? formatNumber(v) : v}`)
    .join(', ');
}

/**
 * One result file as report groups. Shapes recognised:
 * - `rows[]` of `{ benchmark, sbx_ms, baseline, baseline_ms, ratio?, note? }` (time; lower is
 *   better), plus an optional `memory` object (shown as a key/value table)
 * - `results[]` of `{ operation, concurrency, oursOpsPerSec, redisBenchmarkOpsPerSec, ratio? }`
 *   (throughput against redis-benchmark; higher is better)
 * - `results[]` of `{ scenario | operation | name, opsPerSec }` (throughput without an anchor)
 * Anything else: every array of objects in the file as a plain table.
 */
export function normalize(fileName, json, { packageDirs = [] } = {}) {
  const base = {
    id: slug(fileName),
    source: fileName,
    date: dateOf(json),
    environment: environmentOf(json),
    notes: [],
  };
  const title = json.package ?? titleFromName(json.benchmark ?? slug(fileName), packageDirs);

  if (Array.isArray(json.rows) && json.rows.some((r) => 'sbx_ms' in r)) {
    const group = {
      ...base,
      title,
      unit: 'ms',
      better: 'lower',
      rows: json.rows.map((r) => {
        const value = numeric(r.sbx_ms);
        const anchorValue = numeric(r.baseline_ms);
        return {
          name: r.benchmark,
          value,
          anchor: r.baseline,
          anchorValue,
          ratio:
            numeric(r.ratio) ??
            (value !== undefined && anchorValue ? value / anchorValue : undefined),
          note: r.note ?? '',
        };
      }),
      tables: [],
    };
    if (json.tree && typeof json.tree === 'object') {
      group.notes.push(`Tree: ${restAsNote(json.tree, new Set(['root']))}.`);
    }
    group.tables.push(...objectTables(json));
    return [group];
  }

  if (Array.isArray(json.rows) && json.rows.some((r) => 'p50Ms' in r)) {
    // Latency percentiles per row; rows named "bare ..." / "raw ..." / "baseline ..." are the
    // anchors (the same work without sbx), and every other row is compared with each of them.
    const labelKey = ['path', 'benchmark', 'name', 'scenario'].find((k) =>
      json.rows.some((r) => typeof r[k] === 'string'),
    );
    const label = (r) => (labelKey ? String(r[labelKey]) : '');
    const isAnchor = (r) => /^(bare|raw|baseline)\b/i.test(label(r));
    const note = (r) =>
      [
        r.p95Ms !== undefined ? `p95 ${formatNumber(numeric(r.p95Ms))} ms` : '',
        r.samples !== undefined ? `n=${r.samples}` : '',
      ]
        .filter(Boolean)
        .join(', ');
    const anchors = json.rows.filter(isAnchor);
    const rows = [];
    for (const r of json.rows.filter((x) => !isAnchor(x))) {
      const value = numeric(r.p50Ms);
      if (anchors.length === 0) rows.push({ name: label(r), value, note: note(r) });
      for (const a of anchors) {
        const anchorValue = numeric(a.p50Ms);
        rows.push({
          name: label(r),
          value,
          anchor: label(a),
          anchorValue,
          ratio: value !== undefined && anchorValue ? value / anchorValue : undefined,
          note: [note(r), `anchor ${note(a)}`].filter(Boolean).join('; '),
        });
      }
    }
    return [
      {
        ...base,
        title,
        unit: 'ms, p50',
        better: 'lower',
        rows,
        tables: objectTables(json),
      },
    ];
  }

  if (Array.isArray(json.results) && json.results.some((r) => 'oursOpsPerSec' in r)) {
    if (json.meta?.note) base.notes.push(json.meta.note);
    return [
      {
        ...base,
        title: json.package ?? titleFromName(slug(fileName), packageDirs),
        unit: 'ops/s',
        better: 'higher',
        rows: json.results.map((r) => {
          const value = numeric(r.oursOpsPerSec);
          const anchorValue = numeric(r.redisBenchmarkOpsPerSec);
          return {
            name: `${r.operation}${r.concurrency !== undefined ? `, concurrency ${r.concurrency}` : ''}`,
            value,
            anchor: 'redis-benchmark (same script)',
            anchorValue,
            ratio:
              numeric(r.ratio) ??
              (value !== undefined && anchorValue ? value / anchorValue : undefined),
            note: r.oursMeanLatencyMs !== undefined ? `mean latency ${r.oursMeanLatencyMs} ms` : '',
          };
        }),
        tables: [],
      },
    ];
  }

  if (Array.isArray(json.results) && json.results.some((r) => 'opsPerSec' in r)) {
    const nameKey = ['scenario', 'operation', 'name', 'benchmark'].find((k) =>
      json.results.some((r) => typeof r[k] === 'string'),
    );
    return [
      {
        ...base,
        title,
        unit: 'ops/s',
        better: 'higher',
        rows: json.results.map((r) => ({
          name: nameKey ? r[nameKey] : '',
          value: numeric(r.opsPerSec),
          note: restAsNote(r, new Set([nameKey, 'opsPerSec'])),
        })),
        tables: [],
      },
    ];
  }

  // Unknown shape: keep it visible as raw tables of every array of objects.
  const tables = Object.entries(json)
    .filter(
      ([, v]) => Array.isArray(v) && v.length > 0 && v.every((x) => x && typeof x === 'object'),
    )
    .map(([key, list]) => {
      const columns = [
        ...new Set(list.flatMap((x) => Object.keys(x).filter((k) => isScalar(x[k])))),
      ];
      return {
        title: key,
        columns,
        rows: list.map((x) =>
          columns.map((c) => (typeof x[c] === 'number' ? formatNumber(x[c]) : String(x[c] ?? ''))),
        ),
      };
    });
  return [{ ...base, title, unit: undefined, better: undefined, rows: [], tables }];
}

export function formatNumber(n) {
  if (n === undefined) return '';
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return n.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/** A ratio with two decimals, or two significant digits when it is small (0.0031, not 0.00). */
export function formatRatio(r) {
  if (r === undefined) return '';
  return Math.abs(r) >= 0.1 || r === 0 ? r.toFixed(2) : r.toPrecision(2);
}

function cell(text) {
  return String(text ?? '')
    .replace(/\|/g, '\\|')
    .replace(/\r?\n/g, ' ');
}

function ratioHeading(group) {
  return group.better === 'lower'
    ? 'ratio (sbx ÷ anchor, lower is better)'
    : 'ratio (sbx ÷ anchor, higher is better)';
}

/** Markdown for one group: heading, provenance, chart, the table(s). */
export function renderGroup(group, { chartPath } = {}) {
  const lines = [`## ${group.title}`, ''];
  const provenance = [`from \`${group.source}\``];
  if (group.date) provenance.push(String(group.date).slice(0, 10));
  if (group.environment) provenance.push(group.environment);
  lines.push(`<sub>${provenance.join(' · ')}</sub>`, '');
  for (const note of group.notes) lines.push(note, '');
  if (chartPath && group.rows.length > 0) lines.push(`![${group.title}](${chartPath})`, '');
  if (group.rows.length > 0) {
    const anchored = group.rows.some((r) => r.anchor !== undefined);
    if (anchored) {
      lines.push(
        `| benchmark | sbx (${group.unit}) | anchor | anchor (${group.unit}) | ${ratioHeading(group)} | note |`,
        '| --- | ---: | --- | ---: | ---: | --- |',
      );
      for (const r of group.rows) {
        lines.push(
          `| ${cell(r.name)} | ${formatNumber(r.value)} | ${cell(r.anchor ?? '')} | ${formatNumber(r.anchorValue)} | ${formatRatio(r.ratio)} | ${cell(r.note)} |`,
        );
      }
    } else {
      lines.push(`| benchmark | ${group.unit} | note |`, '| --- | ---: | --- |');
      for (const r of group.rows)
        lines.push(`| ${cell(r.name)} | ${formatNumber(r.value)} | ${cell(r.note)} |`);
    }
    lines.push('');
  }
  for (const table of group.tables) {
    lines.push(
      `${table.title}:`,
      '',
      `| ${table.columns.map(cell).join(' | ')} |`,
      `| ${table.columns.map(() => '---').join(' | ')} |`,
    );
    for (const row of table.rows) lines.push(`| ${row.map(cell).join(' | ')} |`);
    lines.push('');
  }
  return lines.join('\n');
}

/** The summary: per group, how many rows and the median ratio against the anchors. */
export function renderSummary(groups) {
  const lines = [
    '| group | rows | median ratio | range | direction |',
    '| --- | ---: | ---: | --- | --- |',
  ];
  for (const g of groups) {
    const ratios = g.rows.map((r) => r.ratio).filter((r) => r !== undefined);
    const range = ratios.length
      ? `${formatRatio(Math.min(...ratios))} – ${formatRatio(Math.max(...ratios))}`
      : '';
    const direction = ratios.length
      ? g.better === 'lower'
        ? 'time: lower is better'
        : 'throughput: higher is better'
      : 'no anchor';
    lines.push(
      `| ${cell(g.title)} | ${g.rows.length || g.tables.reduce((n, t) => n + t.rows.length, 0)} | ${ratios.length ? formatRatio(median(ratios)) : ''} | ${range} | ${direction} |`,
    );
  }
  return lines.join('\n');
}

function escapeXml(text) {
  return String(text).replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c],
  );
}

/**
 * A horizontal bar chart as SVG: the ratio against the anchor per row (with the parity line at 1)
 * when the group has anchors, else the measured value.
 */
export function renderChart(group) {
  const byRatio = group.rows.some((r) => r.ratio !== undefined);
  const bars = group.rows
    .map((r) => ({
      label: r.anchor ? `${r.name} vs ${r.anchor}` : r.name,
      value: byRatio ? r.ratio : r.value,
    }))
    .filter((b) => b.value !== undefined);
  const maxLabel = 70;
  const longest = Math.max(10, ...bars.map((b) => Math.min(b.label.length, maxLabel)));
  // About 6.7 px per character of 12 px sans-serif; labels are right-aligned against the bars.
  const labelWidth = Math.ceil(longest * 6.7) + 16;
  const plotWidth = 360;
  const rowHeight = 22;
  const top = 44;
  const width = labelWidth + plotWidth + 70;
  const height = top + bars.length * rowHeight + 30;
  const max = Math.max(byRatio ? 1 : 0, ...bars.map((b) => b.value)) * 1.05 || 1;
  const x = (v) => labelWidth + (v / max) * plotWidth;
  const heading = byRatio
    ? `${group.title}: sbx ÷ anchor (${group.better === 'lower' ? 'time, lower is better' : 'throughput, higher is better'})`
    : `${group.title}: ${group.unit ?? 'value'}`;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="14" font-weight="bold">${escapeXml(heading)}</text>`,
  ];
  bars.forEach((b, i) => {
    const y = top + i * rowHeight;
    const label = b.label.length > maxLabel ? `${b.label.slice(0, maxLabel - 3)}...` : b.label;
    const good = !byRatio || (group.better === 'lower' ? b.value <= 1 : b.value >= 1);
    out.push(
      `<text x="${labelWidth - 8}" y="${y + 14}" text-anchor="end">${escapeXml(label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 3}" width="${Math.max(1, x(b.value) - labelWidth).toFixed(1)}" height="${rowHeight - 6}" fill="${good ? '#4c9a6a' : '#c8743c'}"/>`,
      `<text x="${(x(b.value) + 4).toFixed(1)}" y="${y + 14}">${escapeXml(byRatio ? formatRatio(b.value) : formatNumber(b.value))}</text>`,
    );
  });
  if (byRatio) {
    const one = x(1).toFixed(1);
    out.push(
      `<line x1="${one}" y1="${top - 6}" x2="${one}" y2="${top + bars.length * rowHeight + 4}" stroke="#333" stroke-dasharray="4 3"/>`,
      `<text x="${one}" y="${top + bars.length * rowHeight + 18}" text-anchor="middle">1.0 = parity</text>`,
    );
  }
  out.push('</svg>', '');
  return out.join('\n');
}

/** Every group of every result file, in file-name order. */
export async function readGroups(dir = RESULTS_DIR) {
  const packageDirs = await readdir(path.join(REPO_ROOT, 'packages')).catch(() => []);
  let names;
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
  const groups = [];
  for (const name of names) {
    const text = await readFile(path.join(dir, name), 'utf8');
    let json;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new Error(`${name}: not valid JSON (${err.message})`, { cause: err });
    }
    groups.push(...normalize(name, json, { packageDirs }));
  }
  return groups;
}

export function renderReport(
  groups,
  { chartDir, title = 'sbx benchmark report', intro = [] } = {},
) {
  const lines = [`# ${title}`, '', ...intro];
  if (groups.length === 0) {
    lines.push(
      'No results: run `npm run bench` (or one package: `npm run bench -w @sbx/<pkg>`).',
      '',
    );
    return lines.join('\n');
  }
  lines.push(renderSummary(groups), '');
  for (const group of groups) {
    lines.push(
      renderGroup(group, { chartPath: chartDir ? `${chartDir}/${group.id}.svg` : undefined }),
    );
  }
  return lines.join('\n');
}

async function writeCharts(groups, dir) {
  await mkdir(dir, { recursive: true });
  for (const group of groups) {
    if (group.rows.length > 0)
      await writeFile(path.join(dir, `${group.id}.svg`), renderChart(group));
  }
}

const REPORT_INTRO = [
  "Generated by `tools/scripts/bench-report.mjs` from `bench/results/*.json` (each package's",
  '`npm run bench` writes one). Values are the medians each benchmark reports; the ratio compares sbx',
  'with its anchor on the same machine and run (ripgrep, GNU find, a raw spawn, redis-benchmark, ...).',
  '',
];

export async function main(argv) {
  const groups = await readGroups();
  await writeCharts(groups, CHARTS_DIR);
  await writeFile(REPORT, renderReport(groups, { chartDir: 'charts', intro: REPORT_INTRO }));
  console.log(
    `wrote ${path.relative(REPO_ROOT, REPORT)} (${groups.length} groups) and charts in ${path.relative(REPO_ROOT, CHARTS_DIR)}/`,
  );
  if (argv.includes('--docs')) {
    const page = await readFile(DOCS_PAGE, 'utf8').catch(() => '');
    const marker = '<!-- bench-report:start -->';
    const head = page.includes(marker) ? page.slice(0, page.indexOf(marker)) : '# Benchmarks\n\n';
    await writeCharts(groups, DOCS_CHARTS_DIR);
    const body = renderReport(groups, { chartDir: 'benchmarks', title: 'Latest results' })
      .replace(/^# /, '## ')
      .replace(/\n## /g, '\n### ');
    await writeFile(DOCS_PAGE, `${head}${marker}\n\n${body}`);
    console.log(
      `refreshed ${path.relative(REPO_ROOT, DOCS_PAGE)} and ${path.relative(REPO_ROOT, DOCS_CHARTS_DIR)}/`,
    );
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}
