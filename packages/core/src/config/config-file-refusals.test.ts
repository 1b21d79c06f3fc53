import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/errors.js';
import { runIsolated } from '../testing/isolated-run.js';
import { loadSandboxConfig, parseSandboxConfigYaml } from './config-loader.js';
import { MAX_CONFIG_BYTES } from './config-yaml.js';

const opts = { env: {}, cwd: '/srv/app' };

/** The error a refused configuration gave; fails the test when it is not a `ConfigError`. */
async function refusal(load: () => unknown): Promise<ConfigError> {
  let caught: unknown;
  try {
    await load();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'the configuration was accepted').toBeDefined();
  expect(caught, String(caught)).toBeInstanceOf(ConfigError);
  expect((caught as ConfigError).code).toBe('CONFIG_INVALID');
  return caught as ConfigError;
}

const messages = (err: ConfigError) => err.issues.map((i) => `${i.path}: ${i.message}`);

/**
 * An alias bomb built at run time: ten levels, each a list of nine aliases of the level below, so
 * the document is a few hundred bytes and its expansion 9^10 nodes.
 */
function aliasBomb(levels = 10): string {
  const name = (i: number) => `l${i}`;
  const lines = [`${name(0)}: &${name(0)} [${Array(9).fill('"x"').join(', ')}]`];
  for (let i = 1; i < levels; i++) {
    lines.push(
      `${name(i)}: &${name(i)} [${Array(9)
        .fill(`*${name(i - 1)}`)
        .join(', ')}]`,
    );
  }
  lines.push(`sandbox:\n  environment:\n    BOMB: *${name(levels - 1)}`);
  return lines.join('\n');
}

describe('every refused configuration text is a ConfigError with a clear message', () => {
  it('a YAML alias bomb is refused as too many aliases, not a bare ReferenceError', async () => {
    const err = await refusal(() => parseSandboxConfigYaml(aliasBomb(), opts));
    expect(messages(err).join('\n')).toMatch(/too many aliases/);
  });

  it('the same bomb given to loadSandboxConfig as text', async () => {
    const err = await refusal(() => loadSandboxConfig({ yaml: aliasBomb() }, opts));
    expect(messages(err).join('\n')).toMatch(/too many aliases/);
  });

  it('an alias of an anchor that is not set, and an alias inside its own anchor', async () => {
    const unset = await refusal(() => parseSandboxConfigYaml('sandbox:\n  use: *nowhere\n', opts));
    expect(messages(unset).join('\n')).toMatch(/YAML: .*alias/i);
    const selfReferencing = await refusal(() =>
      parseSandboxConfigYaml('sandbox:\n  environment: &loop\n    A: [*loop]\n', opts),
    );
    expect(messages(selfReferencing)).toEqual([
      'sandbox.environment.A[0]: is an alias of a node that contains it (the document would be endless)',
    ]);
  });

  it('bad syntax, several documents and deep nesting', async () => {
    expect(
      messages(await refusal(() => parseSandboxConfigYaml('sandbox: [1,\n', opts)))[0],
    ).toMatch(/^: YAML: /);
    expect(
      messages(await refusal(() => parseSandboxConfigYaml('a: 1\n---\nb: 2\n', opts)))[0],
    ).toMatch(/multiple documents/);
    const deep = `sandbox: ${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    expect(messages(await refusal(() => parseSandboxConfigYaml(deep, opts)))[0]).toMatch(/YAML: /);
  });

  it('text over the size limit is refused before it is parsed', async () => {
    const big = `sandbox:\n  use: "@sbx/local"\n# ${'x'.repeat(MAX_CONFIG_BYTES)}\n`;
    const err = await refusal(() => parseSandboxConfigYaml(big, opts));
    expect(messages(err)).toEqual([
      `: too large (${Buffer.byteLength(big)} bytes, at most ${MAX_CONFIG_BYTES})`,
    ]);
  });

  it('wrong types: a scalar or a list document, and YAML types sbx does not read', async () => {
    expect(messages(await refusal(() => parseSandboxConfigYaml('42\n', opts)))[0]).toMatch(
      /expected a mapping/,
    );
    expect(messages(await refusal(() => parseSandboxConfigYaml('- a\n', opts)))[0]).toMatch(
      /expected a mapping/,
    );
    // Each of these used to be read as an empty mapping or passed through silently.
    const cases: Array<[string, RegExp]> = [
      ['sandbox: !!set {a, b}\n', /^sandbox: .*a set \(!!set\)/],
      ['sandbox: !!omap [{use: "@sbx/aio"}]\n', /^sandbox: .*an ordered map \(!!omap\)/],
      ['sandbox:\n  use: !!binary AAAA\n', /^sandbox\.use: .*binary data \(!!binary\)/],
      ['sandbox:\n  use: !!timestamp 2001-12-14\n', /^sandbox\.use: .*a timestamp/],
    ];
    for (const [text, expected] of cases) {
      const err = await refusal(() => parseSandboxConfigYaml(text, opts));
      expect(messages(err)[0], text).toMatch(expected);
    }
  });

  it('a __proto__ key is refused, not dropped', async () => {
    const err = await refusal(() =>
      parseSandboxConfigYaml('sandbox:\n  __proto__:\n    allow_host_bash: true\n', opts),
    );
    expect(messages(err)).toEqual(['sandbox.__proto__: this key is not accepted']);
  });
});

describe('every refused configuration file is a ConfigError with a clear message', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-config-refusals-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a directory, a file that is not UTF-8, and a file over the limit', async () => {
    const asDir = await refusal(() => loadSandboxConfig(dir, opts));
    expect(messages(asDir)).toEqual([': not a regular file']);
    expect(asDir.message).toContain(`Cannot read sbx configuration file ${dir}`);

    const latin1 = path.join(dir, 'latin1.yaml');
    await writeFile(latin1, Buffer.from('sandbox:\n  use: "caf\xe9"\n', 'latin1'));
    expect(messages(await refusal(() => loadSandboxConfig(latin1, opts)))).toEqual([
      ': not valid UTF-8',
    ]);

    const big = path.join(dir, 'big.yaml');
    await writeFile(big, `# ${'x'.repeat(MAX_CONFIG_BYTES)}\n`);
    expect(messages(await refusal(() => loadSandboxConfig(big, opts)))).toEqual([
      `: too large (${MAX_CONFIG_BYTES + 3} bytes, at most ${MAX_CONFIG_BYTES})`,
    ]);
  });

  it('a bomb in a file is refused with the file named', async () => {
    const file = path.join(dir, 'bomb.yaml');
    await writeFile(file, aliasBomb());
    const err = await refusal(() => loadSandboxConfig(file, opts));
    expect(err.message).toContain(file);
    expect(messages(err).join('\n')).toMatch(/too many aliases/);
  });
});

describe('configuration files that would hang or exhaust the process (isolated)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-config-hostile-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a FIFO, an endless device and a huge sparse file are refused at once, in bounded memory', async () => {
    const fifo = path.join(dir, 'config.fifo');
    execFileSync('mkfifo', [fifo]);
    const sparse = path.join(dir, 'sparse.yaml');
    execFileSync('truncate', ['-s', '4G', sparse]);
    const result = await runIsolated({
      maxOldSpaceMb: 96,
      script: `
        import { loadSandboxConfig } from '@sbx/core';
        for (const file of ${JSON.stringify([fifo, '/dev/zero', sparse])}) {
          const err = await loadSandboxConfig(file).then(() => undefined, (e) => e);
          console.log(JSON.stringify({ file, code: err?.code, issues: err?.issues }));
        }
      `,
    });
    expect(result.timedOut, result.stderr).toBe(false);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { code: string; issues: { message: string }[] });
    expect(lines.map((l) => [l.code, l.issues[0]?.message])).toEqual([
      ['CONFIG_INVALID', 'not a regular file'],
      ['CONFIG_INVALID', 'not a regular file'],
      ['CONFIG_INVALID', `too large (${4 * 1024 ** 3} bytes, at most ${MAX_CONFIG_BYTES})`],
    ]);
  });
});
