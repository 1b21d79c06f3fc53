import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowsHostBash } from '../host/host-bash.js';
import { loadSandboxConfig, parseSandboxConfig, parseSandboxConfigYaml } from './config-loader.js';
import { sandboxConfigSchema } from './config-section-schema.js';
import { ConfigError } from '../errors/errors.js';
import type { ConfigIssue } from '../errors/errors.js';

const opts = { env: {}, cwd: '/srv/app' };

function issuesOf(input: unknown, env: Record<string, string> = {}): ConfigIssue[] {
  try {
    parseSandboxConfig(input, { env, cwd: '/srv/app' });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).issues];
  }
  throw new Error('expected a ConfigError');
}

function issueAt(input: unknown, at: string, env: Record<string, string> = {}): string {
  const found = issuesOf(input, env).filter((i) => i.path === at);
  expect(found, `issue at ${at}`).toHaveLength(1);
  return found[0]!.message;
}

describe('parseSandboxConfig defaults', () => {
  it('§10.12.125 defaults: bash_command_timeout 600, health_check_skip_seconds unset', () => {
    const c = parseSandboxConfig({ use: '@sbx/aio' }, opts);
    expect(c.bashCommandTimeout).toBe(600);
    expect(c.healthCheckSkipSeconds).toBeUndefined();
  });

  it('an empty or missing section yields every documented default', () => {
    for (const input of [undefined, null, {}, { sandbox: null }, { sandbox: {} }]) {
      expect(parseSandboxConfig(input, opts)).toEqual({
        use: '@sbx/local',
        allowHostBash: false,
        image: undefined,
        port: undefined,
        replicas: undefined,
        overflowPolicy: 'wait',
        acquireTimeout: 30,
        burstLimit: 0,
        containerPrefix: undefined,
        idleTimeout: undefined,
        healthCheckSkipSeconds: undefined,
        ownership: undefined,
        warmPool: { idleCheckIntervalSeconds: 60 },
        checkpoint: { maxTotalBytes: 1073741824, maxEntries: 100000, snapshotTtlSeconds: 0 },
        specPolicy: {
          images: [],
          maxMemoryMb: undefined,
          maxCpus: undefined,
          maxPids: undefined,
          maxDiskGb: undefined,
          maxTimeoutSeconds: undefined,
          network: { mode: 'open', allow: [], deny: [], credentials: [] },
        },
        mounts: [],
        threadDataMounts: undefined,
        environment: {},
        bashOutputMaxChars: 20000,
        readFileOutputMaxChars: 50000,
        lsOutputMaxChars: 20000,
        bashCommandTimeout: 600,
        searchTimeoutSeconds: 10,
        envPolicy: 'allowlist',
        envAllow: [],
        provisionerUrl: undefined,
        provisionerApiKey: undefined,
        skills: { containerPath: '/mnt/skills', path: undefined },
        readBeforeWrite: { enabled: true },
        baseDir: '/srv/app/.sbx',
        tools: { glob: { maxResults: 200 }, grep: { maxResults: 100 }, processTools: false },
        authorization: undefined,
        local: undefined,
        aio: undefined,
        e2b: undefined,
        boxlite: undefined,
        tenki: undefined,
        opensandbox: undefined,
        providerOptions: undefined,
      });
    }
  });

  it('§10.12.125 host bash is not allowed when the section is missing or null, allowed only explicitly', () => {
    expect(allowsHostBash(undefined)).toBe(false);
    expect(allowsHostBash(null)).toBe(false);
    expect(allowsHostBash(parseSandboxConfig({ sandbox: null }, opts))).toBe(false);
    expect(allowsHostBash(parseSandboxConfig({}, opts))).toBe(false);
    expect(allowsHostBash(parseSandboxConfig({ allow_host_bash: true }, opts))).toBe(true);
  });

  it('ownership defaults apply inside an explicit section: 30 s x 4, prefix "sbx"', () => {
    const c = parseSandboxConfig({ ownership: { type: 'redis' } }, opts);
    expect(c.ownership).toEqual({
      type: 'redis',
      redisUrl: undefined,
      renewalIntervalSeconds: 30,
      ttlMultiplier: 4,
      keyPrefix: 'sbx',
    });
  });

  it('accepts the wrapped and the bare section alike', () => {
    const section = { use: '@sbx/aio#AioSandboxProvider', replicas: 5, image: 'img:1' };
    expect(parseSandboxConfig({ sandbox: section }, opts)).toEqual(
      parseSandboxConfig(section, opts),
    );
  });

  it('returns a deeply frozen object', () => {
    const c = parseSandboxConfig({ mounts: [{ host_path: '/h', container_path: '/c' }] }, opts);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.mounts[0])).toBe(true);
    expect(Object.isFrozen(c.tools.glob)).toBe(true);
  });

  it('a null value means "unset" (an empty YAML value takes the default)', () => {
    const c = parseSandboxConfig(
      {
        replicas: null,
        bash_command_timeout: null,
        ownership: null,
        skills: { container_path: null },
      },
      opts,
    );
    expect(c.replicas).toBeUndefined();
    expect(c.bashCommandTimeout).toBe(600);
    expect(c.ownership).toBeUndefined();
    expect(c.skills.containerPath).toBe('/mnt/skills');
  });
});

describe('parseSandboxConfig bounds (§8, §10.12)', () => {
  it('§10.12 rejects ttl_multiplier < 2 (1.0 included) and accepts 2', () => {
    expect(
      issueAt({ ownership: { ttl_multiplier: 1 } }, 'sandbox.ownership.ttl_multiplier'),
    ).toMatch(/>= 2/);
    expect(
      issueAt({ ownership: { ttl_multiplier: 1.99 } }, 'sandbox.ownership.ttl_multiplier'),
    ).toMatch(/>= 2/);
    expect(
      parseSandboxConfig({ ownership: { ttl_multiplier: 2 } }, opts).ownership?.ttlMultiplier,
    ).toBe(2);
  });

  it('§10.12 rejects renewal_interval_seconds <= 0 and accepts fractions', () => {
    expect(
      issueAt(
        { ownership: { renewal_interval_seconds: 0 } },
        'sandbox.ownership.renewal_interval_seconds',
      ),
    ).toMatch(/> 0/);
    expect(
      parseSandboxConfig({ ownership: { renewal_interval_seconds: 0.5 } }, opts).ownership
        ?.renewalIntervalSeconds,
    ).toBe(0.5);
  });

  it.each([
    ['replicas', 0, /> 0/],
    ['acquire_timeout', 0, /> 0/],
    ['burst_limit', -1, />= 0/],
    ['health_check_skip_seconds', -0.5, />= 0/],
    ['idle_timeout', -1, />= 0/],
    ['bash_output_max_chars', -1, />= 0/],
    ['read_file_output_max_chars', -1, />= 0/],
    ['ls_output_max_chars', -1, />= 0/],
    ['bash_command_timeout', 0, /> 0/],
    ['port', 70000, /<= 65535/],
    ['replicas', 1.5, /integer|int/],
  ] as const)('§8 rejects %s = %s', (key, value, why) => {
    expect(issueAt({ [key]: value }, `sandbox.${key}`)).toMatch(why);
  });

  it('§8 accepts the documented edge values (0 disables truncation and idle reaping)', () => {
    const c = parseSandboxConfig(
      {
        bash_output_max_chars: 0,
        read_file_output_max_chars: 0,
        ls_output_max_chars: 0,
        idle_timeout: 0,
        burst_limit: 0,
        health_check_skip_seconds: 0,
      },
      opts,
    );
    expect([
      c.bashOutputMaxChars,
      c.readFileOutputMaxChars,
      c.lsOutputMaxChars,
      c.idleTimeout,
    ]).toEqual([0, 0, 0, 0]);
  });

  it('§8 overflow_policy is one of wait, reject, burst', () => {
    expect(issueAt({ overflow_policy: 'queue' }, 'sandbox.overflow_policy')).toBe(
      'must be one of "wait", "reject", "burst", got string "queue"',
    );
    expect(
      parseSandboxConfig({ overflow_policy: 'burst', burst_limit: 2 }, opts).overflowPolicy,
    ).toBe('burst');
  });

  it('reports a wrong type with what was found', () => {
    expect(issueAt({ port: '8080' }, 'sandbox.port')).toBe('expected number, got string "8080"');
    expect(issueAt({ mounts: 'x' }, 'sandbox.mounts')).toBe('expected a list, got string "x"');
  });
});

describe('parseSandboxConfig errors list every offending key in one ConfigError', () => {
  it('collects problems from every level, with snake_case paths as written', () => {
    const issues = issuesOf({
      sandbox: {
        replicas: 0,
        overflo_policy: 'wait',
        ownership: { ttl_multiplier: 1, type: 'mem', extra: true },
        mounts: [{ host_path: 'relative', container_path: '/data/../etc', x: 1 }],
        environment: { 'BAD NAME': 'v' },
        tools: { glob: { max_results: 0 } },
      },
    });
    expect(issues.map((i) => i.path).sort()).toEqual(
      [
        'sandbox.environment["BAD NAME"]',
        'sandbox.mounts[0].container_path',
        'sandbox.mounts[0].host_path',
        'sandbox.mounts[0].x',
        'sandbox.overflo_policy',
        'sandbox.ownership.extra',
        'sandbox.ownership.ttl_multiplier',
        'sandbox.ownership.type',
        'sandbox.replicas',
        'sandbox.tools.glob.max_results',
      ].sort(),
    );
  });

  it('the message names each path and reason', () => {
    let error: unknown;
    try {
      parseSandboxConfig({ replicas: 0, ownership: { ttl_multiplier: 1 } }, opts);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    expect((error as ConfigError).message).toContain('sandbox.replicas: must be > 0');
    expect((error as ConfigError).message).toContain(
      'sandbox.ownership.ttl_multiplier: must be >= 2',
    );
  });

  it('unknown keys are errors, with a suggestion for near misses', () => {
    expect(issueAt({ overflo_policy: 'wait' }, 'sandbox.overflo_policy')).toBe(
      'unknown key (did you mean "overflow_policy"?)',
    );
    expect(issueAt({ ownership: { ttl: 3 } }, 'sandbox.ownership.ttl')).toBe('unknown key');
    expect(issueAt({ skills: { containerpath: '/x' } }, 'sandbox.skills.containerpath')).toMatch(
      /did you mean "container_path"/,
    );
  });

  it('provider blocks and authorization are open records: any key passes through verbatim', () => {
    const c = parseSandboxConfig(
      {
        e2b: { api_key: 'k', anything: { nested: [1, null] } },
        aio: { whatever: true },
        provider_options: { x: 1 },
        authorization: { enabled: true, provider: { use: 'x', config: { roles: {} } } },
      },
      opts,
    );
    expect(c.e2b).toEqual({ api_key: 'k', anything: { nested: [1, null] } });
    expect(c.aio).toEqual({ whatever: true });
    expect(c.providerOptions).toEqual({ x: 1 });
    expect(c.authorization).toEqual({
      enabled: true,
      provider: { use: 'x', config: { roles: {} } },
    });
  });

  it('an open block must still be a mapping', () => {
    expect(issueAt({ e2b: 'key' }, 'sandbox.e2b')).toMatch(/expected a mapping/);
  });

  it('rejects a document that is not a mapping', () => {
    expect(issuesOf(['a'])).toEqual([
      { path: '', message: expect.stringMatching(/expected a mapping/) },
    ]);
    expect(issuesOf({ sandbox: 3 })).toEqual([
      { path: 'sandbox', message: expect.stringMatching(/expected a mapping/) },
    ]);
  });
});

describe('parseSandboxConfig provider specifier (use)', () => {
  it('accepts package names with optional subpath and #ExportName', () => {
    for (const use of [
      '@sbx/local',
      '@sbx/aio#AioSandboxProvider',
      'my-provider',
      'my-provider/sub#Make',
      '@acme/x#default',
    ]) {
      expect(parseSandboxConfig({ use }, opts).use).toBe(use);
    }
  });

  it('rejects malformed specifiers', () => {
    for (const use of ['', ' @sbx/local', 'Bad Name', '@sbx/aio#', '@sbx/aio#1x', './local.js']) {
      expect(issueAt({ use }, 'sandbox.use')).toBeTruthy();
    }
  });

  it('translates the reference provider class paths to sbx packages', () => {
    const cases: Array<[string, string]> = [
      ['deerflow.sandbox.local:LocalSandboxProvider', '@sbx/local'],
      ['deerflow.community.aio_sandbox:AioSandboxProvider', '@sbx/aio'],
      ['deerflow.community.aio_sandbox.aio_sandbox_provider:AioSandboxProvider', '@sbx/aio'],
      ['deerflow.community.e2b_sandbox:E2BSandboxProvider', '@sbx/e2b'],
      ['deerflow.community.boxlite:BoxliteProvider', '@sbx/boxlite'],
      ['deerflow.community.tenki:TenkiSandboxProvider', '@sbx/tenki'],
      ['deerflow.community.opensandbox:OpenSandboxProvider', '@sbx/opensandbox'],
    ];
    for (const [use, expected] of cases)
      expect(parseSandboxConfig({ use }, opts).use).toBe(expected);
  });

  it('rejects other Python class paths, naming the npm form', () => {
    expect(issueAt({ use: 'my_company.sandbox:CustomProvider' }, 'sandbox.use')).toMatch(
      /Python class path/,
    );
    expect(issueAt({ use: 'deerflow.community.aio_sandbox:AioSandbox' }, 'sandbox.use')).toMatch(
      /Python class path/,
    );
  });
});

describe('parseSandboxConfig reference layout compatibility', () => {
  it('moves the flat provider keys of the selected provider into its block', () => {
    const c = parseSandboxConfig(
      {
        use: 'deerflow.community.e2b_sandbox:E2BSandboxProvider',
        api_key: 'k',
        template: 'tpl',
        reconciliation_max_pages: 3,
        replicas: 4,
      },
      opts,
    );
    expect(c.use).toBe('@sbx/e2b');
    expect(c.e2b).toEqual({ api_key: 'k', template: 'tpl', reconciliation_max_pages: 3 });
    expect(c.replicas).toBe(4);
  });

  it('reports a flat key that is set in the block too', () => {
    expect(
      issueAt({ use: '@sbx/tenki', api_key: 'a', tenki: { api_key: 'b' } }, 'sandbox.api_key'),
    ).toMatch(/sandbox\.tenki\.api_key; keep one/);
  });

  it('reports another provider flat key as unknown, saying where it belongs', () => {
    expect(issueAt({ use: '@sbx/aio', memory_mib: 512 }, 'sandbox.memory_mib')).toMatch(
      /sandbox\.boxlite\.memory_mib/,
    );
  });

  it('issues inside relocated keys name the key where the user wrote it', () => {
    expect(issueAt({ use: '@sbx/e2b', api_key: '$E2B_KEY' }, 'sandbox.api_key')).toMatch(
      /E2B_KEY.*not set/,
    );
  });

  it('reads skills, read_before_write, authorization and tools from a whole reference config file', () => {
    const c = parseSandboxConfig(
      {
        config_version: 34,
        models: [{ name: 'm' }],
        sandbox: { use: 'deerflow.sandbox.local:LocalSandboxProvider', allow_host_bash: false },
        skills: { container_path: '/opt/skills', path: '/srv/skills', deferred_discovery: true },
        read_before_write: { enabled: false },
        authorization: { enabled: false },
        tools: [
          { name: 'web_search', max_results: 5 },
          {
            name: 'glob',
            group: 'file:read',
            use: 'deerflow.sandbox.tools:glob_tool',
            max_results: 50,
          },
          { name: 'grep', use: 'deerflow.sandbox.tools:grep_tool' },
        ],
      },
      opts,
    );
    expect(c.use).toBe('@sbx/local');
    expect(c.skills).toEqual({ containerPath: '/opt/skills', path: '/srv/skills' });
    expect(c.readBeforeWrite.enabled).toBe(false);
    expect(c.authorization).toEqual({ enabled: false });
    expect(c.tools).toEqual({
      glob: { maxResults: 50 },
      grep: { maxResults: 100 },
      processTools: false,
    });
  });

  it('reports lifted values at their top-level path, and conflicts with the sandbox section', () => {
    expect(
      issueAt(
        { sandbox: {}, skills: { container_path: '/mnt/user-data' } },
        'skills.container_path',
      ),
    ).toMatch(/reserved/);
    expect(
      issueAt({ sandbox: {}, tools: [{ name: 'grep', max_results: 0 }] }, 'tools[0].max_results'),
    ).toMatch(/> 0/);
    expect(issueAt({ sandbox: { authorization: {} }, authorization: {} }, 'authorization')).toMatch(
      /keep one/,
    );
    expect(
      issueAt(
        {
          sandbox: { read_before_write: { enabled: true } },
          read_before_write: { enabled: false },
        },
        'read_before_write.enabled',
      ),
    ).toMatch(/keep one/);
  });

  it('a bare section keeps top-level names as its own keys (no lifting)', () => {
    expect(issueAt({ models: [] }, 'sandbox.models')).toBe('unknown key');
  });
});

describe('parseSandboxConfig environment and $NAME values', () => {
  it('§8 environment values starting with $ read the host environment; unset → ""', () => {
    const c = parseSandboxConfig(
      {
        environment: {
          A: '$HOST_A',
          B: '$MISSING',
          C: 'plain',
          D: 3,
          E: true,
          F: null,
          G: '$$LITERAL',
        },
      },
      { env: { HOST_A: 'from-host' }, cwd: '/' },
    );
    expect(c.environment).toEqual({
      A: 'from-host',
      B: '',
      C: 'plain',
      D: '3',
      E: 'true',
      F: '',
      G: '$LITERAL',
    });
  });

  it('resolves "$NAME" in other fields and reports unset variables there', () => {
    const c = parseSandboxConfig(
      { provisioner_api_key: '$PROV_KEY', aio: { token: '$TOKEN' } },
      { env: { PROV_KEY: 'k1', TOKEN: 't1' }, cwd: '/' },
    );
    expect(c.provisionerApiKey).toBe('k1');
    expect(c.aio).toEqual({ token: 't1' });
    expect(issueAt({ provisioner_api_key: '$PROV_KEY' }, 'sandbox.provisioner_api_key')).toBe(
      'environment variable PROV_KEY (referenced as "$PROV_KEY") is not set',
    );
  });

  it('leaves strings that merely contain $ alone, and unescapes $$', () => {
    const c = parseSandboxConfig({ image: 'repo/img:$tag-1', provisioner_api_key: '$$abc' }, opts);
    expect(c.image).toBe('repo/img:$tag-1');
    expect(c.provisionerApiKey).toBe('$abc');
  });
});

describe('parseSandboxConfig paths and directories', () => {
  it('base_dir: config, else SBX_HOME, else ./.sbx; relative to cwd', () => {
    expect(
      parseSandboxConfig({ base_dir: 'data' }, { env: { SBX_HOME: '/h' }, cwd: '/w' }).baseDir,
    ).toBe('/w/data');
    expect(parseSandboxConfig({}, { env: { SBX_HOME: '/h' }, cwd: '/w' }).baseDir).toBe('/h');
    expect(parseSandboxConfig({}, { env: { SBX_HOME: '' }, cwd: '/w' }).baseDir).toBe('/w/.sbx');
  });

  it('§10.8.97 mounts: trailing "/" of the container path is stripped; read_only defaults to false', () => {
    const c = parseSandboxConfig(
      {
        mounts: [
          { host_path: '/srv/public', container_path: '/custom-skills/public/' },
          { host_path: 'C:\\data', container_path: '/custom-skills/nested', read_only: true },
        ],
      },
      opts,
    );
    expect(c.mounts).toEqual([
      { hostPath: '/srv/public', containerPath: '/custom-skills/public', readOnly: false },
      { hostPath: 'C:\\data', containerPath: '/custom-skills/nested', readOnly: true },
    ]);
  });

  it('§10.8.97 mounts with a relative host path or a non-absolute container path are rejected, not skipped', () => {
    expect(
      issueAt(
        { mounts: [{ host_path: 'rel', container_path: '/x' }] },
        'sandbox.mounts[0].host_path',
      ),
    ).toMatch(/absolute/);
    expect(
      issueAt(
        { mounts: [{ host_path: '/a', container_path: 'x' }] },
        'sandbox.mounts[0].container_path',
      ),
    ).toMatch(/absolute/);
    expect(issueAt({ mounts: [{ container_path: '/x' }] }, 'sandbox.mounts[0].host_path')).toMatch(
      /required/,
    );
  });

  it('skills.container_path must be canonical and must not overlap reserved mounts', () => {
    expect(
      parseSandboxConfig({ skills: { container_path: '/opt/skills/' } }, opts).skills.containerPath,
    ).toBe('/opt/skills');
    for (const bad of [
      '/mnt/user-data',
      '/mnt/user-data/skills',
      '/mnt',
      '/mnt/acp-workspace',
      'skills',
      '/a/./b',
      '/',
    ]) {
      expect(
        issueAt({ skills: { container_path: bad } }, 'sandbox.skills.container_path'),
      ).toBeTruthy();
    }
  });

  it('validates URLs', () => {
    expect(issueAt({ provisioner_url: 'ftp://x' }, 'sandbox.provisioner_url')).toMatch(/http/);
    expect(
      issueAt({ ownership: { redis_url: 'localhost:6379' } }, 'sandbox.ownership.redis_url'),
    ).toMatch(/redis/);
    expect(
      parseSandboxConfig({ ownership: { redis_url: 'rediss://r:6380/1' } }, opts).ownership
        ?.redisUrl,
    ).toBe('rediss://r:6380/1');
  });
});

describe('YAML input', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const yaml = [
    'sandbox:',
    '  use: "@sbx/aio"',
    '  replicas: 2',
    '  ownership:',
    '    type: redis',
    '    ttl_multiplier: 3',
    '  environment:',
    '    EMPTY:',
  ].join('\n');

  it('parses YAML text, wrapped in sandbox:', async () => {
    const c = await loadSandboxConfig(yaml, opts);
    expect(c.use).toBe('@sbx/aio');
    expect(c.replicas).toBe(2);
    expect(c.ownership?.ttlMultiplier).toBe(3);
    expect(c.environment).toEqual({ EMPTY: '' });
    expect(parseSandboxConfigYaml(yaml, opts)).toEqual(c);
    expect(await loadSandboxConfig({ yaml: 'use: "@sbx/e2b"' }, opts)).toMatchObject({
      use: '@sbx/e2b',
    });
  });

  it('loads a file by path, file URL or { path }', async () => {
    const file = path.join(dir, 'config.yaml');
    await writeFile(file, yaml);
    expect((await loadSandboxConfig(file, opts)).replicas).toBe(2);
    expect((await loadSandboxConfig(pathToFileURL(file), opts)).replicas).toBe(2);
    expect((await loadSandboxConfig({ path: file }, opts)).replicas).toBe(2);
  });

  it('names the file in the error heading, with every issue listed', async () => {
    const file = path.join(dir, 'bad.yaml');
    await writeFile(file, 'sandbox:\n  replicas: 0\n  ownership:\n    ttl_multiplier: 1\n');
    const err = await loadSandboxConfig(file, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(`Invalid sbx configuration in ${file}`);
    expect((err as ConfigError).issues.map((i) => i.path)).toEqual([
      'sandbox.replicas',
      'sandbox.ownership.ttl_multiplier',
    ]);
  });

  it('a missing file is a ConfigError carrying the fs error as cause', async () => {
    const err = await loadSandboxConfig(path.join(dir, 'nope.yaml'), opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([{ path: '', message: 'file not found' }]);
    expect((err as ConfigError).cause).toMatchObject({ code: 'ENOENT' });
  });

  it('YAML syntax errors and duplicate keys are reported, not resolved silently', async () => {
    const dup = await loadSandboxConfig('sandbox:\n  replicas: 1\n  replicas: 2\n', opts).catch(
      (e: unknown) => e,
    );
    expect(dup).toBeInstanceOf(ConfigError);
    expect((dup as ConfigError).issues[0]?.message).toMatch(/YAML: .*unique/i);
    const broken = await loadSandboxConfig('sandbox:\n  replicas: [1,\n', opts).catch(
      (e: unknown) => e,
    );
    expect(broken).toBeInstanceOf(ConfigError);
  });

  it('supports merge keys', async () => {
    const c = await loadSandboxConfig(
      'base: &base\n  replicas: 7\nsandbox:\n  <<: *base\n  use: "@sbx/aio"\n',
      opts,
    );
    expect(c.replicas).toBe(7);
  });
});

describe('sandboxConfigSchema', () => {
  it('validates a normalised section directly', () => {
    const parsed = sandboxConfigSchema().safeParse({ use: '@sbx/aio', replicas: 3 });
    expect(parsed.success).toBe(true);
    expect(parsed.data?.replicas).toBe(3);
    expect(sandboxConfigSchema().safeParse({ replicas: 0 }).success).toBe(false);
    expect(sandboxConfigSchema().safeParse({ unknown_key: 1 }).success).toBe(false);
  });
});
