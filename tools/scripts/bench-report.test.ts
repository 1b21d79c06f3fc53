import { describe, expect, it } from 'vitest';
import {
  median,
  normalize,
  renderChart,
  renderGroup,
  renderReport,
  renderSummary,
  titleFromName,
} from './bench-report.mjs';

const PACKAGES = ['core', 'local', 'ownership-redis'];

const localShape = {
  package: '@sbx/local',
  started: '2026-01-02T03:04:05.000Z',
  machine: { platform: 'linux', node: 'v20.0.0', cpus: 2, cpuModel: 'X' },
  rows: [
    { benchmark: 'grep', sbx_ms: 200, baseline: 'rg', baseline_ms: 100, ratio: 2, note: 'a|b' },
    { benchmark: 'glob', sbx_ms: [30, 10, 20], baseline: 'find', baseline_ms: [40, 40] },
  ],
  memory: { threads: 1000, rssGrowthMb: 0.5, samples: [{ threads: 0 }] },
};

const redisShape = {
  meta: { date: '2026-01-02', node: 'v20.0.0', note: 'how it was measured' },
  results: [
    {
      operation: 'take',
      concurrency: 1,
      oursOpsPerSec: 3000,
      redisBenchmarkOpsPerSec: 6000,
      ratio: 0.5,
    },
    { operation: 'take', concurrency: 64, oursOpsPerSec: 24000, redisBenchmarkOpsPerSec: 8000 },
  ],
};

const serializerShape = {
  benchmark: 'core-acquire-serializer',
  results: [{ scenario: 'hold/release', opsPerSec: 100000, keys: 10 }],
};

describe('median', () => {
  it('takes the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeUndefined();
  });
});

describe('titleFromName', () => {
  it('names a result file after its package', () => {
    expect(titleFromName('core-acquire-serializer', PACKAGES)).toBe(
      '@sbx/core: acquire-serializer',
    );
    expect(titleFromName('ownership-redis', PACKAGES)).toBe('@sbx/ownership-redis');
    expect(titleFromName('other-thing', PACKAGES)).toBe('other-thing');
  });
});

describe('normalize', () => {
  it('reads timed rows against anchors, taking medians of raw samples and computing missing ratios', () => {
    const [group] = normalize('local.json', localShape, { packageDirs: PACKAGES });
    expect(group).toMatchObject({ title: '@sbx/local', unit: 'ms', better: 'lower', id: 'local' });
    expect(group.rows).toEqual([
      { name: 'grep', value: 200, anchor: 'rg', anchorValue: 100, ratio: 2, note: 'a|b' },
      { name: 'glob', value: 20, anchor: 'find', anchorValue: 40, ratio: 0.5, note: '' },
    ]);
    expect(group.tables[0].rows).toEqual([
      ['threads', '1,000'],
      ['rssGrowthMb', '0.5'],
    ]);
    expect(group.environment).toBe('Node v20.0.0, linux, 2 CPUs (X)');
  });

  it('reads throughput against redis-benchmark', () => {
    const [group] = normalize('ownership-redis.json', redisShape, { packageDirs: PACKAGES });
    expect(group).toMatchObject({ title: '@sbx/ownership-redis', unit: 'ops/s', better: 'higher' });
    expect(group.rows.map((r: { name: string; ratio: number }) => [r.name, r.ratio])).toEqual([
      ['take, concurrency 1', 0.5],
      ['take, concurrency 64', 3],
    ]);
    expect(group.notes).toEqual(['how it was measured']);
  });

  it('reads throughput without an anchor', () => {
    const [group] = normalize('core-acquire-serializer.json', serializerShape, {
      packageDirs: PACKAGES,
    });
    expect(group.title).toBe('@sbx/core: acquire-serializer');
    expect(group.rows).toEqual([{ name: 'hold/release', value: 100000, note: 'keys=10' }]);
  });

  it('compares latency rows with the "bare ..." anchor rows of the same file', () => {
    const aio = {
      benchmark: 'aio',
      docker: '20.10',
      rows: [
        { path: 'reuse (active)', samples: 200, p50Ms: 1, p95Ms: 3 },
        { path: 'cold create', samples: 12, p50Ms: 300, p95Ms: 600 },
        { path: 'bare `docker run -d` + readiness', samples: 12, p50Ms: 400, p95Ms: 500 },
      ],
      coldCreateOverhead: { p50OverApiMs: -100 },
    };
    const [group] = normalize('aio.json', aio, { packageDirs: ['aio'] });
    expect(group).toMatchObject({ title: '@sbx/aio', unit: 'ms, p50', better: 'lower' });
    expect(
      group.rows.map((r: { name: string; anchor: string; ratio: number }) => [
        r.name,
        r.anchor,
        r.ratio,
      ]),
    ).toEqual([
      ['reuse (active)', 'bare `docker run -d` + readiness', 0.0025],
      ['cold create', 'bare `docker run -d` + readiness', 0.75],
    ]);
    expect(group.rows[0].note).toBe('p95 3 ms, n=200; anchor p95 500 ms, n=12');
    expect(group.tables).toEqual([
      {
        title: 'coldCreateOverhead',
        columns: ['measure', 'value'],
        rows: [['p50OverApiMs', '-100']],
      },
    ]);
    expect(renderGroup(group)).toContain(
      '| reuse (active) | 1 | bare `docker run -d` + readiness | 400 | 0.0025 |',
    );
  });

  it('shows an unknown shape as plain tables instead of dropping it', () => {
    const [group] = normalize(
      'aio-startup.json',
      { runs: [{ image: 'x', seconds: 1.5 }] },
      {
        packageDirs: ['aio'],
      },
    );
    expect(group.rows).toEqual([]);
    expect(group.tables).toEqual([
      { title: 'runs', columns: ['image', 'seconds'], rows: [['x', '1.5']] },
    ]);
    expect(renderGroup(group)).toContain('| image | seconds |');
  });
});

describe('rendering', () => {
  const [local] = normalize('local.json', localShape, { packageDirs: PACKAGES });
  const [serializer] = normalize('core-acquire-serializer.json', serializerShape, {
    packageDirs: PACKAGES,
  });

  it('tables the medians and ratios, escaping pipes', () => {
    const md = renderGroup(local, { chartPath: 'charts/local.svg' });
    expect(md).toContain('![@sbx/local](charts/local.svg)');
    expect(md).toContain('| grep | 200 | rg | 100 | 2.00 | a\\|b |');
    expect(md).toContain('| glob | 20 | find | 40 | 0.50 |  |');
  });

  it('summarises each group by its median ratio', () => {
    expect(renderSummary([local, serializer]).split('\n').slice(2)).toEqual([
      '| @sbx/local | 2 | 1.25 | 0.50 – 2.00 | time: lower is better |',
      '| @sbx/core: acquire-serializer | 1 |  |  | no anchor |',
    ]);
  });

  it('draws one bar per row and the parity line when there are anchors', () => {
    const svg = renderChart(local);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<rect /g)).toHaveLength(1 + local.rows.length);
    expect(svg).toContain('1.0 = parity');
    // Slower than the anchor is drawn in the warning colour, faster in the good one.
    expect(svg).toContain('fill="#c8743c"');
    expect(svg).toContain('fill="#4c9a6a"');
    expect(renderChart(serializer)).not.toContain('parity');
  });

  it('says how to get results when there are none', () => {
    expect(renderReport([])).toContain('npm run bench');
  });
});
