import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HostPathMasker,
  buildOutputMaskPattern,
  maskLocalPathsInOutput,
  resolveHostRoot,
  resolvedRootCacheSize,
  scanPathOccurrences,
} from './path-masking.js';
import type { ThreadDataPaths } from './virtual-paths.js';

const SKILLS = '/opt/host/skills';
const THREAD: ThreadDataPaths = {
  workspacePath: '/srv/data/users/u/threads/t1/user-data/workspace',
  uploadsPath: '/srv/data/users/u/threads/t1/user-data/uploads',
  outputsPath: '/srv/data/users/u/threads/t1/user-data/outputs',
  acpWorkspacePath: '/srv/data/users/u/threads/t1/acp-workspace',
};
const OPTS = {
  threadData: THREAD,
  skillsHostPath: SKILLS,
  integrationsHostPath: '/srv/data/integrations/skills',
};

describe('buildOutputMaskPattern', () => {
  it('§10.4.51 builds exactly the frozen source; separator-agnostic widens only separators', () => {
    expect(buildOutputMaskPattern('/host/skills').source).toBe(
      String.raw`\/host\/skills(?=\/|$|[^\p{L}\p{N}_./-])(?:[/\\][^\s"';&|<>()]*)?`,
    );
    expect(buildOutputMaskPattern('C:\\host\\skills', { separatorAgnostic: true }).source).toBe(
      String.raw`C:[/\\]host[/\\]skills(?=\/|$|[^\p{L}\p{N}_./-])(?:[/\\][^\s"';&|<>()]*)?`,
    );
    expect(buildOutputMaskPattern('/a.b+c').source.startsWith(String.raw`\/a\.b\+c(?=`)).toBe(true);
    const agnostic = buildOutputMaskPattern('C:\\host\\skills', { separatorAgnostic: true });
    const strict = buildOutputMaskPattern('C:\\host\\skills');
    expect('see C:/host/skills/file.md'.match(agnostic)).toEqual(['C:/host/skills/file.md']);
    expect('see C:/host/skills/file.md'.match(strict)).toBeNull();
  });

  it('property: the direct scanner finds exactly the matches of the compiled rule', () => {
    const piece = fc.constantFrom(
      '/h/sk',
      '\\h\\sk',
      '/h\\sk',
      '/',
      '\\',
      '-',
      '.',
      '_',
      'x',
      'é',
      '2',
      ' ',
      ',',
      ':',
      '"',
      "'",
      ';',
      '(',
      '\n',
      '😀',
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 14 }).map((a) => a.join('')),
        fc.constantFrom('/h/sk', '\\h\\sk'),
        fc.boolean(),
        (text, base, agnostic) => {
          const pattern = buildOutputMaskPattern(base, { separatorAgnostic: agnostic });
          // Where the base occurs again inside a compiled match (`W/a:W/b`), the scanner cuts the
          // tail there by design (every occurrence is masked; the chained test below pins it):
          // the two rules are compared on the other texts.
          const haystack = agnostic ? text.replace(/\\/g, '/') : text;
          const needle = agnostic ? base.replace(/\\/g, '/') : base;
          const matches = [...text.matchAll(pattern)];
          if (
            matches.some((m) => haystack.slice(m.index + 1, m.index + m[0].length).includes(needle))
          ) {
            return;
          }
          const expected = matches.map((m) => [m.index, m.index + m[0].length] as [number, number]);
          const scanned = [...scanPathOccurrences(text, base, { separatorAgnostic: agnostic })];
          expect(scanned).toEqual(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('maskLocalPathsInOutput', () => {
  it('§10.4.42 replaces host user-data, skills, ACP and integration paths', async () => {
    const out = await maskLocalPathsInOutput(
      [
        `${THREAD.workspacePath}/a.txt`,
        `${THREAD.outputsPath}/report.md`,
        `${SKILLS}/public/demo/SKILL.md`,
        `${THREAD.acpWorkspacePath}/notes`,
        '/srv/data/integrations/skills/lark/doc/SKILL.md',
        '/srv/data/users/u/threads/t1/user-data',
      ].join('\n'),
      OPTS,
    );
    expect(out.split('\n')).toEqual([
      '/mnt/user-data/workspace/a.txt',
      '/mnt/user-data/outputs/report.md',
      '/mnt/skills/public/demo/SKILL.md',
      '/mnt/acp-workspace/notes',
      '/mnt/skills/integrations/lark/doc/SKILL.md',
      '/mnt/user-data',
    ]);
  });

  it('§10.4.43 does not rewrite siblings of a host base', async () => {
    const siblings = [
      `${SKILLS}-extra/x`,
      `${SKILLS}2/x`,
      `${SKILLS}.bak`,
      `${SKILLS}foo`,
      `${SKILLS}_backup/y`,
      `${THREAD.acpWorkspacePath}-backup/x`,
      `${THREAD.acpWorkspacePath}2`,
      `${THREAD.acpWorkspacePath}.old`,
      `${THREAD.acpWorkspacePath}_tmp`,
    ];
    const out = await maskLocalPathsInOutput(siblings.join('\n'), OPTS);
    expect(out.split('\n')).toEqual(siblings);
  });

  it('§10.4.44 user-data siblings are masked through the virtual root', async () => {
    const out = await maskLocalPathsInOutput(
      '/srv/data/users/u/threads/t1/user-data/outputs2/x.txt',
      OPTS,
    );
    expect(out).toBe('/mnt/user-data/outputs2/x.txt');
  });

  it('§10.4.45 fires before comma, colon, space and quote, and converts a backslash child', async () => {
    const out = await maskLocalPathsInOutput(
      `a ${SKILLS}, b ${SKILLS}:/other c "${SKILLS}" d ${SKILLS} e ${SKILLS}\\win`,
      OPTS,
    );
    expect(out).toBe(
      'a /mnt/skills, b /mnt/skills:/other c "/mnt/skills" d /mnt/skills e /mnt/skills/win',
    );
  });

  it('§10.4.46 converts a host base at the very end of the output', async () => {
    expect(await maskLocalPathsInOutput(`cd ${THREAD.workspacePath}`, OPTS)).toBe(
      'cd /mnt/user-data/workspace',
    );
  });

  it('§10.4.47 is idempotent, identical per item and batched, and masks skills without thread data', async () => {
    const items = [
      `${THREAD.workspacePath}/a`,
      `${SKILLS}/public/x`,
      `${THREAD.uploadsPath}`,
      'plain text',
    ];
    const batched = await maskLocalPathsInOutput(items.join('\n'), OPTS);
    const perItem = await Promise.all(items.map((i) => maskLocalPathsInOutput(i, OPTS)));
    expect(batched).toBe(perItem.join('\n'));
    expect(await maskLocalPathsInOutput(batched, OPTS)).toBe(batched);
    expect(
      await maskLocalPathsInOutput(`${SKILLS}/public/x`, {
        skillsHostPath: SKILLS,
        threadData: null,
      }),
    ).toBe('/mnt/skills/public/x');
  });

  it('masks Windows-spelled thread paths with either separator', async () => {
    const td: ThreadDataPaths = {
      workspacePath: 'C:\\Users\\admin\\.sbx\\threads\\t1\\user-data\\workspace',
      outputsPath: 'C:\\Users\\admin\\.sbx\\threads\\t1\\user-data\\outputs',
    };
    const out = await maskLocalPathsInOutput(
      'C:/Users/admin/.sbx/threads/t1/user-data/workspace/a.txt and C:\\Users\\admin\\.sbx\\threads\\t1\\user-data\\outputs\\b.txt',
      { threadData: td },
    );
    expect(out).toBe('/mnt/user-data/workspace/a.txt and /mnt/user-data/outputs/b.txt');
  });

  it('uses a custom skills container path', async () => {
    expect(
      await maskLocalPathsInOutput(`${SKILLS}/x`, {
        skillsHostPath: SKILLS,
        skillsContainerPath: '/custom/skills',
      }),
    ).toBe('/custom/skills/x');
  });

  describe('canonical spellings', () => {
    let tmp: string;
    beforeAll(async () => {
      tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-mask-')));
      await mkdir(path.join(tmp, 'real', 'workspace'), { recursive: true });
      await symlink(path.join(tmp, 'real'), path.join(tmp, 'link'));
    });
    afterAll(async () => {
      await rm(tmp, { recursive: true, force: true });
    });

    it('masks both the configured and the canonical spelling of a root', async () => {
      const td = { workspacePath: path.join(tmp, 'link', 'workspace') };
      const out = await maskLocalPathsInOutput(
        `${path.join(tmp, 'link', 'workspace', 'a')} ${path.join(tmp, 'real', 'workspace', 'b')}`,
        { threadData: td },
      );
      expect(out).toBe('/mnt/user-data/workspace/a /mnt/user-data/workspace/b');
    });

    it('bounds the resolved-root cache at 256 entries', async () => {
      for (let i = 0; i < 300; i++) await resolveHostRoot(path.join(tmp, `thread-${i}`));
      expect(resolvedRootCacheSize()).toBeLessThanOrEqual(256);
    });
  });
});

describe('HostPathMasker', () => {
  it('§10.4.49 maps host paths back, including backslash children and a bare root at the end', () => {
    const masker = new HostPathMasker(
      [
        { hostPath: '/host/mount/deep', virtualPath: '/mnt/deep' },
        { hostPath: '/host/mount', virtualPath: '/mnt/data' },
      ],
      { normalizeTailSeparators: true },
    );
    expect(masker.mask('ls /host/mount/a.txt /host/mount/deep/b\\c.txt /host/mount')).toBe(
      'ls /mnt/data/a.txt /mnt/deep/b/c.txt /mnt/data',
    );
    expect(masker.mask('/host/mount\\file.txt')).toBe('/mnt/data/file.txt');
    expect(masker.mask('/host/mountain/x /host/mount-2')).toBe('/host/mountain/x /host/mount-2');
  });
});

describe('host paths chained in one word are all masked', () => {
  it('W/a:W/b:W/c (a PATH-style list) masks every occurrence', () => {
    const masker = new HostPathMasker([
      { hostPath: '/data/t/ws', virtualPath: '/mnt/user-data/workspace' },
    ]);
    expect(masker.mask('PATH=/data/t/ws/a:/data/t/ws/b:/data/t/ws/c')).toBe(
      'PATH=/mnt/user-data/workspace/a:/mnt/user-data/workspace/b:/mnt/user-data/workspace/c',
    );
  });
});
