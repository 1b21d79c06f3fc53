import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runIsolated } from '../testing/isolated-run.js';
import { HostPathMasker, maskLocalPathsInOutput } from './path-masking.js';
import type { ThreadDataPaths } from './virtual-paths.js';

// Host roots are built at run time from parts, as a tenant's own paths would be.
const root = ['', 'srv', 'data', 'users', 'u'].join('/');
const THREAD: ThreadDataPaths = {
  workspacePath: `${root}/threads/t1/user-data/workspace`,
  uploadsPath: `${root}/threads/t1/user-data/uploads`,
  outputsPath: `${root}/threads/t1/user-data/outputs`,
  acpWorkspacePath: `${root}/threads/t1/acp-workspace`,
};
const SKILLS = ['', 'opt', 'host', 'skills'].join('/');
const INTEGRATIONS = `${SKILLS}/integrations-managed`;
const CUSTOM = `${root}/custom-skills`;
const OPTS = {
  threadData: THREAD,
  skillsHostPath: SKILLS,
  integrationsHostPath: INTEGRATIONS,
  userCustomSkillsHostPath: CUSTOM,
};
/** Every host base the options mask, the user-data root included. */
const BASES = [
  THREAD.workspacePath!,
  THREAD.uploadsPath!,
  THREAD.outputsPath!,
  THREAD.acpWorkspacePath!,
  `${root}/threads/t1/user-data`,
  SKILLS,
  INTEGRATIONS,
  CUSTOM,
];
const VIRTUAL: Record<string, string> = {
  [THREAD.workspacePath!]: '/mnt/user-data/workspace',
  [THREAD.uploadsPath!]: '/mnt/user-data/uploads',
  [THREAD.outputsPath!]: '/mnt/user-data/outputs',
  [THREAD.acpWorkspacePath!]: '/mnt/acp-workspace',
  [`${root}/threads/t1/user-data`]: '/mnt/user-data',
  [SKILLS]: '/mnt/skills',
  [INTEGRATIONS]: '/mnt/skills/integrations',
  [CUSTOM]: '/mnt/skills/custom',
};

/** Whether a host base is still in `text` where the masking rule would match it. */
function leaksAHostBase(text: string): boolean {
  const folded = text.replace(/\\/g, '/');
  return BASES.some((base) => {
    for (let at = folded.indexOf(base); at >= 0; at = folded.indexOf(base, at + 1)) {
      const next = folded[at + base.length];
      if (next === undefined || !/[\p{L}\p{N}_.-]/u.test(next)) return true;
    }
    return false;
  });
}

describe('host paths chained in any number and any mix are all masked', () => {
  it('a PATH of every root, twice over, in one word', async () => {
    const parts = [...BASES, ...BASES].map((b, i) => `${b}/bin${i}`);
    const out = await maskLocalPathsInOutput(`PATH=${parts.join(':')}`, OPTS);
    expect(out).toBe(
      `PATH=${[...BASES, ...BASES].map((b, i) => `${VIRTUAL[b]}/bin${i}`).join(':')}`,
    );
  });

  it('a thousand chained roots, with and without separators, backslashes included', async () => {
    const pieces: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      const base = BASES[i % BASES.length]!;
      const spelled = i % 7 === 0 ? base.replace(/\//g, '\\') : base;
      pieces.push(`${spelled}${i % 3 === 0 ? '' : `/f${i}`}${[':', '', ',', '='][i % 4]}`);
    }
    const out = await maskLocalPathsInOutput(pieces.join(''), OPTS);
    expect(leaksAHostBase(out)).toBe(false);
  });

  it('property: no host base survives, whatever the chain (maskLocalPathsInOutput and HostPathMasker)', async () => {
    const masker = new HostPathMasker(
      BASES.map((hostPath) => ({ hostPath, virtualPath: VIRTUAL[hostPath]! })),
      { separatorAgnostic: true },
    );
    const piece = fc.oneof(
      fc.constantFrom(...BASES),
      fc.constantFrom(...BASES).map((b) => b.replace(/\//g, '\\')),
      fc.constantFrom('/', '\\', ':', ',', '=', ' ', '-x', 'é', '/a', '/b/c', ';', '"', 'x'),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 40 }), async (pieces) => {
        const text = pieces.join('');
        expect(leaksAHostBase(await maskLocalPathsInOutput(text, OPTS)), text).toBe(false);
        expect(leaksAHostBase(masker.mask(text)), text).toBe(false);
      }),
      { numRuns: 2_000 },
    );
  });

  it('the deepest root wins wherever roots nest, in any source order', () => {
    const shallowFirst = new HostPathMasker([
      { hostPath: '/h/skills', virtualPath: '/mnt/skills' },
      { hostPath: '/h/skills/custom/u1', virtualPath: '/mnt/skills/custom' },
    ]);
    expect(shallowFirst.mask('/h/skills/custom/u1/x:/h/skills/public/y')).toBe(
      '/mnt/skills/custom/x:/mnt/skills/public/y',
    );
  });
});

describe('masking is linear in the output (hostile long inputs, isolated)', () => {
  it('a megabyte of one root chained to itself (W/W/W/...) is masked at once', async () => {
    const run = await runIsolated({
      maxOldSpaceMb: 256,
      script: `
        import { HostPathMasker, maskLocalPathsInOutput } from '@sbx/core';
        const base = ${JSON.stringify(THREAD.workspacePath)};
        const text = (base + '/').repeat(Math.ceil(2 ** 21 / (base.length + 1)));
        const masker = new HostPathMasker([{ hostPath: base, virtualPath: '/mnt/user-data/workspace' }]);
        let t0 = performance.now();
        const a = masker.mask(text);
        const maskerMs = performance.now() - t0;
        t0 = performance.now();
        const b = await maskLocalPathsInOutput(text, { threadData: { workspacePath: base } });
        const localMs = performance.now() - t0;
        console.log(JSON.stringify({ maskerMs, localMs, leaks: a.includes(base) || b.includes(base) }));
      `,
    });
    expect(run.timedOut, `timed out; stderr: ${run.stderr}`).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const { maskerMs, localMs, leaks } = JSON.parse(run.stdout) as Record<string, number | boolean>;
    expect(leaks).toBe(false);
    // 2 MiB in one linear pass is tens of milliseconds; the former rescans took minutes.
    expect(maskerMs).toBeLessThan(2_000);
    expect(localMs).toBeLessThan(2_000);
  });

  it('long tails, long runs of separators and near-miss roots stay linear', async () => {
    const run = await runIsolated({
      maxOldSpaceMb: 256,
      script: `
        import { maskLocalPathsInOutput } from '@sbx/core';
        const base = ${JSON.stringify(THREAD.workspacePath)};
        const opts = { threadData: { workspacePath: base, outputsPath: ${JSON.stringify(THREAD.outputsPath)} } };
        const MB = 2 ** 20;
        const texts = [
          base + '/' + 'a'.repeat(2 * MB),
          '/'.repeat(2 * MB) + base,
          (base.slice(0, -1) + '/').repeat(Math.ceil(2 * MB / base.length)),
          (base + 'x').repeat(Math.ceil(2 * MB / (base.length + 1))),
          (base + '/a' + ':').repeat(Math.ceil(MB / (base.length + 3))) + 'b'.repeat(MB),
        ];
        const ms = [];
        for (const text of texts) {
          const t0 = performance.now();
          await maskLocalPathsInOutput(text, opts);
          ms.push(performance.now() - t0);
        }
        console.log(JSON.stringify(ms));
      `,
    });
    expect(run.timedOut, `timed out; stderr: ${run.stderr}`).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    for (const ms of JSON.parse(run.stdout) as number[]) expect(ms).toBeLessThan(2_000);
  });
});
