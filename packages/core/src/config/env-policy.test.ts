import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BLOCKED_ENV_NAMES,
  REDACTED_PLACEHOLDER,
  buildSandboxEnv,
  isSecretEnvName,
  isSecretEnvValue,
  redactSecrets,
  secretsForLines,
  validateExtraEnv,
} from './env-policy.js';
import { InvalidArgumentError } from '../errors/errors.js';

const PINNED_BLOCKED = [
  'OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'LANGFUSE_SECRET_KEY',
  'GITHUB_TOKEN',
  'AWS_SECRET_ACCESS_KEY',
  'DB_PASSWORD',
  'MY_SERVICE_CREDENTIAL',
  'api_key',
  'Some_Token_Here',
  'DATABASE_URL',
  'REDIS_URL',
  'MONGODB_URI',
  'AMQP_URL',
  'SENTRY_DSN',
  'POSTGRES_DSN',
  'CONN_STR',
  'GH_PAT',
  'MYSQL_PWD',
  'REDISCLI_AUTH',
  'REDIS_AUTH',
  'DB_PASS',
  'SMTP_PASS',
  'MYSQL_PASS',
  'REDIS_PASS',
  'FTP_PASS',
  'MAIL_PASS',
  'PGPASSFILE',
  'PGSERVICEFILE',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
];

const PINNED_ALLOWED = [
  'PATH',
  'HOME',
  'SHELL',
  'USER',
  'LANG',
  'LC_ALL',
  'PWD',
  'OLDPWD',
  'TMPDIR',
  'VIRTUAL_ENV',
  'PYTHONPATH',
  'DEERFLOW_PLAIN_VAR',
  'NEXT_PUBLIC_BASE_URL',
  'SERVICE_ENDPOINT',
];

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('isSecretEnvName', () => {
  it.each(PINNED_BLOCKED)('§10.10.118 blocks %s', (name) => {
    expect(isSecretEnvName(name)).toBe(true);
  });

  it.each(PINNED_ALLOWED)('§10.10.118 keeps %s', (name) => {
    expect(isSecretEnvName(name)).toBe(false);
  });

  it('blocks every one of the 20 exact names, in any case', () => {
    expect(BLOCKED_ENV_NAMES.size).toBe(20);
    for (const name of BLOCKED_ENV_NAMES) {
      expect(isSecretEnvName(name)).toBe(true);
      expect(isSecretEnvName(name.toLowerCase())).toBe(true);
    }
  });

  it("has no *URL* wildcard, and *_PWD spares the shell's PWD and OLDPWD", () => {
    expect(isSecretEnvName('SOME_SERVICE_URL')).toBe(false);
    expect(isSecretEnvName('MY_PWD_HINT')).toBe(false);
    expect(isSecretEnvName('PWD')).toBe(false);
    expect(isSecretEnvName('OLDPWD')).toBe(false);
  });

  // Divergence from the reference (whose scrub let these through): each carries a credential.
  it.each([
    'SLACK_WEBHOOK_URL',
    'SQLALCHEMY_DATABASE_URI',
    'DOCKER_AUTH_CONFIG',
    'SMTP_PWD',
    'BASIC_AUTH',
    'SSH_AUTH_SOCK',
    'OAUTH_CALLBACK',
  ])('blocks %s by name', (name) => {
    expect(isSecretEnvName(name)).toBe(true);
  });

  it.each([
    ['HTTPS_PROXY', 'http://u:pw@proxy.internal:3128'],
    ['CELERY_BROKER_URL', 'redis://:hunter2@redis:6379/0'],
    ['SENTRY_URL', 'https://abc123@o1.ingest.sentry.io/42'],
  ])('drops %s for its credential-bearing value', (name, value) => {
    expect(isSecretEnvName(name)).toBe(false);
    expect(isSecretEnvValue(value)).toBe(true);
    expect(buildSandboxEnv(undefined, { baseEnv: { [name]: value }, mode: 'scrub' })).toEqual({});
  });

  it('errs on the safe side for incidental marker substrings', () => {
    expect(isSecretEnvName('COMPASS_HOME')).toBe(true);
    expect(isSecretEnvName('BYPASS_CACHE')).toBe(true);
    expect(isSecretEnvName('MONKEY_BUSINESS')).toBe(true);
  });

  it('property: any name containing a marker, in any case, is blocked', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.constantFrom('key', 'Secret', 'TOKEN', 'pAsS', 'credential', 'dsn'),
        fc.string(),
        (pre, marker, post) => isSecretEnvName(pre + marker + post),
      ),
    );
  });
});

describe('buildSandboxEnv', () => {
  const host = {
    PATH: '/usr/bin',
    HOME: '/home/u',
    PWD: '/work',
    OLDPWD: '/',
    LANG: 'C.UTF-8',
    VIRTUAL_ENV: '/venv',
    OPENAI_API_KEY: 'sk-host',
    ANTHROPIC_API_KEY: 'ak-host',
    MYSQL_URL: 'mysql://u:p@h/db',
    MYSQL_PWD: 'host-pwd',
    REDISCLI_AUTH: 'host-auth',
    UNSET_ONE: undefined,
  };

  it('§10.10.118 scrubs platform secrets and keeps benign variables (scrub mode)', () => {
    const env = buildSandboxEnv(undefined, { baseEnv: host, mode: 'scrub' });
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
      PWD: '/work',
      OLDPWD: '/',
      LANG: 'C.UTF-8',
      VIRTUAL_ENV: '/venv',
    });
  });

  it('§10.10.118 layers injected values on top; injection wins even for blocked names', () => {
    const env = buildSandboxEnv(
      { MYSQL_PWD: 'injected-pwd', INJECTED_API_KEY: 'abc', PATH: '/opt/bin' },
      { baseEnv: host, mode: 'scrub' },
    );
    expect(env.MYSQL_PWD).toBe('injected-pwd');
    expect(env.INJECTED_API_KEY).toBe('abc');
    expect(env.PATH).toBe('/opt/bin');
    expect(env.OPENAI_API_KEY).toBeUndefined();
    expect(env.REDISCLI_AUTH).toBeUndefined();
  });

  it('the allowlist (default) inherits only benign names, LC_* and env_allow', () => {
    const base = {
      PATH: '/bin',
      HOME: '/h',
      LC_ALL: 'C',
      TERM: 'xterm',
      MY_APP_SETTING: 'x',
      UNKNOWN_CREDENTIAL_HOLDER: 'y',
      SHOWN: 'z',
    };
    expect(buildSandboxEnv(undefined, { baseEnv: base })).toEqual({
      PATH: '/bin',
      HOME: '/h',
      LC_ALL: 'C',
      TERM: 'xterm',
    });
    expect(
      buildSandboxEnv(undefined, { baseEnv: base, allow: ['SHOWN', 'UNKNOWN_CREDENTIAL_HOLDER'] }),
    ).toEqual({
      PATH: '/bin',
      HOME: '/h',
      LC_ALL: 'C',
      TERM: 'xterm',
      SHOWN: 'z',
    });
  });

  it('does not mutate the base environment', () => {
    const base = { PATH: '/bin', GITHUB_TOKEN: 't' };
    buildSandboxEnv({ X: '1' }, { baseEnv: base });
    expect(base).toEqual({ PATH: '/bin', GITHUB_TOKEN: 't' });
  });

  it('defaults to process.env', () => {
    const env = buildSandboxEnv();
    expect(env.PATH).toBe(process.env.PATH);
    for (const name of Object.keys(env)) expect(isSecretEnvName(name)).toBe(false);
  });

  it('validates injected keys', () => {
    expect(() => buildSandboxEnv({ 'X;Y': 'v' }, { baseEnv: {} })).toThrow(InvalidArgumentError);
  });
});

describe('validateExtraEnv', () => {
  const rejected: unknown[] = [
    'X;rm -rf /mnt/user-data;Y',
    'X`whoami`',
    'X$(id)',
    'X&Y',
    'X|Y',
    'X>Y',
    'X<Y',
    'X Y',
    'X\tY',
    'X\nY',
    '1FOO',
    '',
    '   ',
  ];

  it.each(rejected)('§1.1 rejects key %j', (key) => {
    const err = thrown(() => validateExtraEnv({ [key as string]: 'v' }));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toMatch(
      /^extra_env key .+ is not a valid POSIX environment variable name \(must match \^\[A-Za-z_\]\[A-Za-z0-9_\]\*\$\)/,
    );
  });

  it('§1.1 rejects an integer key (123), rendered like Python repr', () => {
    const err = thrown(() =>
      validateExtraEnv(new Map([[123, 'v']]) as unknown as Record<string, unknown>),
    );
    expect((err as Error).message).toBe(
      'extra_env key 123 is not a valid POSIX environment variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)',
    );
  });

  it('quotes string keys like Python repr', () => {
    expect((thrown(() => validateExtraEnv({ 'X;Y': 'v' })) as Error).message).toMatch(
      /^extra_env key 'X;Y' is not/,
    );
    expect((thrown(() => validateExtraEnv({ 'X\nY': 'v' })) as Error).message).toMatch(
      /^extra_env key 'X\\nY' is not/,
    );
  });

  it.each(['GH_TOKEN', 'GITHUB_TOKEN', '_HIDDEN', 'foo123', 'MIXED_case_42', 'X'])(
    '§1.1 accepts key %s',
    (key) => {
      expect(() => validateExtraEnv({ [key]: 'v; rm -rf / `x` $(y)' })).not.toThrow();
    },
  );

  it('§1.1 accepts undefined, null and {}', () => {
    expect(() => validateExtraEnv(undefined)).not.toThrow();
    expect(() => validateExtraEnv(null)).not.toThrow();
    expect(() => validateExtraEnv({})).not.toThrow();
  });

  it('rejects non-string values and NUL characters in values', () => {
    expect(() => validateExtraEnv({ A: 1 })).toThrow(/must be a string, got number/);
    expect(() => validateExtraEnv({ A: null })).toThrow(/got null/);
    expect(() => validateExtraEnv({ A: 'a\0b' })).toThrow(/NUL/);
  });

  it('property: a key is accepted exactly when it matches the POSIX name rule', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (key) => {
        let ok = true;
        try {
          validateExtraEnv({ [key]: 'v' });
        } catch {
          ok = false;
        }
        return ok === /^[A-Za-z_][A-Za-z0-9_]*$/.test(key);
      }),
    );
  });
});

describe('redactSecrets', () => {
  it('§10.10.119 redacts values of 8+ characters and leaves short ones', () => {
    const out = redactSecrets('token=supersecret123 answer=42', {
      A: 'supersecret123',
      B: '42',
    });
    expect(out).toBe(`token=${REDACTED_PLACEHOLDER} answer=42`);
    expect(REDACTED_PLACEHOLDER).toBe('[redacted]');
  });

  it('redacts every occurrence', () => {
    expect(redactSecrets('abcdefgh-abcdefgh', ['abcdefgh'])).toBe('[redacted]-[redacted]');
  });

  it('redacts the longest value as a whole when one value contains another', () => {
    expect(redactSecrets('x=abcdefgh12345678', ['abcdefgh', 'abcdefgh12345678'])).toBe(
      'x=[redacted]',
    );
  });

  it('hides overlapping values completely', () => {
    // Replacing one value first would leave "klmnop" (the tail of the other) visible.
    expect(redactSecrets('<abcdefghijklmnop>', ['abcdefghij', 'ghijklmnop'])).toBe('<[redacted]>');
  });

  it('keeps adjacent values as separate placeholders', () => {
    expect(redactSecrets('AAAAAAAABBBBBBBB', ['AAAAAAAA', 'BBBBBBBB'])).toBe(
      '[redacted][redacted]',
    );
  });

  it('passes text through when nothing is injected', () => {
    expect(redactSecrets('plain', undefined)).toBe('plain');
    expect(redactSecrets('plain', {})).toBe('plain');
  });

  it('property: no injected value of 8+ characters survives, however values overlap', () => {
    // A three-letter alphabet makes overlapping and nested secrets common; the placeholder shares
    // no letter with it, so any surviving occurrence would be a real leak.
    const letters = fc.constantFrom('A', 'B', 'C');
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: letters, minLength: 8, maxLength: 12 }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(fc.string({ unit: fc.constantFrom('A', 'B', 'C', '1', ' '), maxLength: 10 }), {
          maxLength: 4,
        }),
        (secrets, filler) => {
          const text = [...filler, ...secrets, ...secrets.map((s) => s.slice(3))].join('');
          const out = redactSecrets(text, secrets);
          return secrets.every((s) => !out.includes(s));
        },
      ),
    );
  });
});

describe('secretsForLines', () => {
  // Built at run time: a key-like value whose lines include blank and indentation-only ones.
  const pem = [
    '-----BEGIN TEST KEY-----',
    'MIIEvQIBADANBgkqhkiG9w0B',
    ' '.repeat(12),
    '\t'.repeat(9),
    '',
    'AQEFAASCBKcwggSjAgEAAoIB',
    '-----END TEST KEY-----',
  ].join('\r\n');

  it('redacts each line of a multi-line value, whatever its line endings', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const value = pem.split('\r\n').join(eol);
      const shown = redactSecrets('x MIIEvQIBADANBgkqhkiG9w0B y', secretsForLines({ KEY: value }));
      expect(shown).toBe(`x ${REDACTED_PLACEHOLDER} y`);
    }
  });

  it('takes no line that is only whitespace: it reveals nothing and would mangle every indented line', () => {
    const secrets = secretsForLines({ KEY: pem, BLANK: '\n'.repeat(12) });
    const indented = `${' '.repeat(16)}return 1;${'\n'.repeat(14)}\t\t\t\t\t\t\t\t\t\tdone`;
    expect(redactSecrets(indented, secrets)).toBe(indented);
  });
});
