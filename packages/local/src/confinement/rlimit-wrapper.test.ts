import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfinementLimits } from './cgroup-limits.js';
import {
  findRlimitWrapper,
  PRLIMIT_CANDIDATES,
  rlimitArgv,
  SH_WRAPPER,
  type RlimitWrapper,
} from './rlimit-wrapper.js';

const prlimit = findRlimitWrapper(PRLIMIT_CANDIDATES);
const wrappers: [string, RlimitWrapper | undefined][] = [
  ['sh', SH_WRAPPER],
  ['prlimit', prlimit.kind === 'prlimit' ? prlimit : undefined],
];

const MIB = 1024 * 1024;

function run(argv: string[]): { stdout: string; status: number | null; signal: string | null } {
  const [file, ...args] = argv;
  const result = spawnSync(file ?? '', args, { encoding: 'utf8', timeout: 30_000 });
  return { stdout: result.stdout, status: result.status, signal: result.signal };
}

describe.each(wrappers)('rlimitArgv through %s', (kind, wrapper) => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const maybe = wrapper ? it : it.skip;

  maybe('sets data, fsize and core (and nproc through prlimit) on the command', () => {
    const limits = resolveConfinementLimits({
      pids: 77,
      memoryBytes: 300 * MIB,
      fileSizeBytes: 5 * MIB,
    });
    const out = run(rlimitArgv(limits, ['/bin/cat', '/proc/self/limits'], wrapper));
    expect(out.status).toBe(0);
    const limit = (name: string): string | undefined =>
      new RegExp(`^${name}\\s+(\\S+)\\s+(\\S+)`, 'm').exec(out.stdout)?.slice(1, 3).join(' ');
    expect(limit('Max data size')).toBe(`${300 * MIB} ${300 * MIB}`);
    expect(limit('Max file size')).toBe(`${5 * MIB} ${5 * MIB}`);
    expect(limit('Max core file size')).toBe('0 0');
    if (kind === 'prlimit') expect(limit('Max processes')).toBe('77 77');
  });

  maybe('stops a process writing past the file size limit', () => {
    const dir = mkdtempSync(path.join(tmpdir(), `rlimit-${kind}-`));
    dirs.push(dir);
    const file = path.join(dir, 'big');
    const limits = resolveConfinementLimits({ fileSizeBytes: MIB });
    const out = run(
      rlimitArgv(limits, ['/bin/sh', '-c', 'head -c 3145728 /dev/zero > "$0"', file], wrapper),
    );
    expect(out.status === 0 && out.signal === null).toBe(false);
    expect(statSync(file).size).toBeLessThanOrEqual(MIB);
  });

  maybe('passes an argv element with shell syntax as one argument, never as shell text', () => {
    const dir = mkdtempSync(path.join(tmpdir(), `rlimit-${kind}-`));
    dirs.push(dir);
    const marker = path.join(dir, 'pwned');
    // Built at run time: a quote-breaking payload, a command substitution, a `--` and an option.
    const payload = Buffer.from(`JzsgdG91Y2ggJHt4fTsgIyAkKHRvdWNoICR7eH0p`, 'base64')
      .toString()
      .replaceAll('${x}', marker);
    const out = run(
      rlimitArgv(resolveConfinementLimits(), ['/bin/echo', payload, '--', '-n'], wrapper),
    );
    expect(out.status).toBe(0);
    expect(out.stdout).toBe(`${payload} -- -n\n`);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('rlimitArgv checks', () => {
  it('refuses an empty argv and limits outside their bounds', () => {
    expect(() => rlimitArgv(resolveConfinementLimits(), [], SH_WRAPPER)).toThrow(/non-empty argv/);
    const bad = { ...resolveConfinementLimits(), pids: 0 };
    expect(() => rlimitArgv(bad, ['/bin/true'], SH_WRAPPER)).toThrow(/pids/);
    const injected = {
      ...resolveConfinementLimits(),
      memoryBytes: '1; reboot' as unknown as number,
    };
    expect(() => rlimitArgv(injected, ['/bin/true'], SH_WRAPPER)).toThrow(/memoryBytes/);
  });

  it('ends prlimit options before the command, so an argv[0] starting with - is the command', () => {
    const argv = rlimitArgv(resolveConfinementLimits(), ['--version'], {
      kind: 'prlimit',
      path: '/usr/bin/prlimit',
    });
    expect(argv.indexOf('--')).toBe(argv.length - 2);
  });
});
