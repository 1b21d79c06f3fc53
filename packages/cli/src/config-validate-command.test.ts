import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sbx, tempDir } from './test-support.js';

describe('sbx config validate', () => {
  let dir: { dir: string; remove: () => Promise<void> };
  const file = async (name: string, text: string): Promise<string> => {
    const p = path.join(dir.dir, name);
    await writeFile(p, text);
    return p;
  };

  beforeEach(async () => {
    dir = await tempDir('config');
  });
  afterEach(async () => {
    await dir.remove();
  });

  it('accepts a valid file and names the provider it selects', async () => {
    const valid = await file(
      'ok.yaml',
      ['sandbox:', '  use: "@sbx/local"', '  allow_host_bash: true', ''].join('\n'),
    );
    const run = await sbx(['config', 'validate', valid]);
    expect(run).toMatchObject({ code: 0, stdout: `${valid}: valid (provider @sbx/local)\n` });
  });

  it('lists every issue at its key path and exits 1', async () => {
    const bad = await file(
      'bad.yaml',
      [
        'sandbox:',
        '  use: "@sbx/local"',
        '  allow_host_bash: "yes"',
        '  bash_output_max_char: 10',
        'authorization:',
        '  enabled: true',
        '  fail_open: true',
        '',
      ].join('\n'),
    );
    const run = await sbx(['config', 'validate', bad]);
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`${bad}: invalid`);
    const paths = lines.slice(1).map((l) => l.trim().split(':')[0]);
    expect(paths).toEqual([
      'sandbox.allow_host_bash',
      'sandbox.bash_output_max_char',
      'authorization.fail_open',
      'authorization.provider',
    ]);
    expect(run.stdout).toMatch(
      /bash_output_max_char: unknown key \(did you mean "bash_output_max_chars"\?\)/,
    );
  });

  it('checks every provider block through its package, with did-you-mean', async () => {
    const bad = await file(
      'blocks.yaml',
      [
        'sandbox:',
        '  use: "@sbx/local"',
        '  local:',
        '    max_cached_thread: 3',
        '  aio:',
        '    bogus_key: 1',
        '  e2b:',
        '    templat: base',
        '  tenki:',
        '    cpu_core: 2',
        '  provisioner:',
        '    namespac: sbx',
        '',
      ].join('\n'),
    );
    const run = await sbx(['config', 'validate', '--json', bad]);
    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { issues: { path: string; message: string }[] };
    expect(result.issues).toEqual(
      expect.arrayContaining([
        {
          path: 'sandbox.local.max_cached_thread',
          message: 'unknown key (did you mean "max_cached_threads"?)',
        },
        { path: 'sandbox.e2b.templat', message: 'unknown key (did you mean "template"?)' },
        { path: 'sandbox.tenki.cpu_core', message: 'unknown key (did you mean "cpu_cores"?)' },
        {
          path: 'sandbox.provisioner.namespac',
          message: 'unknown key (did you mean "namespace"?)',
        },
      ]),
    );
    expect(result.issues.map((i) => i.path)).toContain('sandbox.aio.bogus_key');
  });

  it('a block whose package cannot be loaded is a warning, not an issue', async () => {
    const ok = await file(
      'uninstalled.yaml',
      ['sandbox:', '  use: "@sbx/local"', '  boxlite:', '    name_prefix: x', ''].join('\n'),
    );
    const importer = async (specifier: string) => {
      if (specifier === '@sbx/boxlite') throw new Error("Cannot find package '@sbx/boxlite'");
      return import(specifier);
    };
    const run = await sbx(['config', 'validate', ok], { importer });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      'sbx: warning: sandbox.boxlite not checked: @sbx/boxlite could not be loaded',
    );
  });

  it('validates the authorization section the way @sbx/authz reads it', async () => {
    const bad = await file(
      'authz.yaml',
      ['authorization:', '  enabled: true', '  fail_open: true', ''].join('\n'),
    );
    const run = await sbx(['config', 'validate', '--json', bad]);
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout) as { valid: boolean; issues: { path: string }[] };
    expect(doc.valid).toBe(false);
    expect(doc.issues.map((i) => i.path)).toContain('authorization.fail_open');
  });

  it('reports a missing file as an issue, resolved against the working directory', async () => {
    const run = await sbx(['config', 'validate', '--json', 'nope.yaml'], { cwd: dir.dir });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: false,
      file: path.join(dir.dir, 'nope.yaml'),
      valid: false,
      issues: [{ path: '', message: 'file not found' }],
    });
  });
});

describe('one pass, and sbx doctor -c agrees', () => {
  let dir: { dir: string; remove: () => Promise<void> };
  const file = async (name: string, lines: string[]): Promise<string> => {
    const p = path.join(dir.dir, name);
    await writeFile(p, `${lines.join('\n')}\n`);
    return p;
  };

  beforeEach(async () => {
    dir = await tempDir('config-one-pass');
  });
  afterEach(async () => {
    await dir.remove();
  });

  async function validate(config: string): Promise<{ code: number; issues: string[] }> {
    const run = await sbx(['config', 'validate', '--json', config]);
    const doc = JSON.parse(run.stdout) as { issues?: { path: string; message: string }[] };
    return { code: run.code, issues: (doc.issues ?? []).map((i) => `${i.path}: ${i.message}`) };
  }

  async function doctorConfigRow(config: string): Promise<{ status: string; detail: string }> {
    const run = await sbx(['doctor', '--json', '-c', config], {
      cwd: dir.dir,
      env: { SBX_HOME: dir.dir, DOCKER_HOST: `unix://${path.join(dir.dir, 'no.sock')}` },
    });
    const report = JSON.parse(run.stdout) as {
      checks: { id: string; status: string; detail: string }[];
    };
    return report.checks.find((c) => c.id === 'config')!;
  }

  it('lists core, provider block and authorization issues of one file in one run', async () => {
    const bad = await file('all.yaml', [
      'sandbox:',
      '  use: "@sbx/aio"',
      '  replicas: 0',
      '  bash_output_max_char: 10',
      '  aio:',
      '    netwrok: host',
      '  e2b:',
      '    templat: base',
      'authorization:',
      '  enabled: true',
      '  fail_open: true',
    ]);
    const { code, issues } = await validate(bad);
    expect(code).toBe(1);
    expect(issues.map((i) => i.split(':')[0])).toEqual([
      'sandbox.replicas',
      'sandbox.bash_output_max_char',
      'sandbox.aio.netwrok',
      'sandbox.e2b.templat',
      'authorization.fail_open',
      'authorization.provider',
    ]);
  });

  it('checks the blocks also when a key of the document root is refused', async () => {
    const bad = await file('root.yaml', [
      'skills:',
      '  path: relative/skills',
      'sandbox:',
      '  use: "@sbx/local"',
      '  skills:',
      '    path: /srv/skills',
      '  local:',
      '    max_cached_thread: 3',
    ]);
    const { issues } = await validate(bad);
    expect(issues.map((i) => i.split(':')[0])).toEqual(
      expect.arrayContaining(['sandbox.local.max_cached_thread']),
    );
    expect(issues.length).toBeGreaterThan(1);
  });

  it('names a document that is no mapping once, as core does', async () => {
    const { issues } = await validate(await file('list.yaml', ['- a', '- b']));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^: expected a mapping/);
  });

  it('still reads the authorization section when the sandbox section is no mapping', async () => {
    const bad = await file('section.yaml', [
      'sandbox: 5',
      'authorization:',
      '  enabled: true',
      '  fail_open: true',
    ]);
    const { issues } = await validate(bad);
    expect(issues.map((i) => i.split(':')[0])).toEqual([
      'sandbox',
      'authorization.fail_open',
      'authorization.provider',
    ]);
  });

  it.each([
    ['a core key', ['sandbox:', '  replicas: 0']],
    ['a provider block only', ['sandbox:', '  use: "@sbx/aio"', '  aio:', '    netwrok: host']],
    ['the authorization section only', ['authorization:', '  enabled: true', '  fail_open: true']],
    [
      'all three',
      ['sandbox:', '  replicas: 0', '  e2b:', '    templat: x', 'authorization:', '  bogus: 1'],
    ],
    ['nothing', ['sandbox:', '  use: "@sbx/local"', '  allow_host_bash: true']],
  ])('validate and doctor -c say the same of %s', async (_name, lines) => {
    const config = await file('case.yaml', lines);
    const validation = await validate(config);
    const row = await doctorConfigRow(config);
    if (validation.code === 0) {
      expect(row.status).toBe('ok');
    } else {
      expect(row.status).toBe('fail');
      expect(row.detail).toBe(validation.issues.join('; '));
    }
  });
});
