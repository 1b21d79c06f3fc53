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
