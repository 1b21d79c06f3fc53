import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DoctorCheck, DoctorReport } from './doctor-checks.js';
import { renderDoctorReport } from './doctor-command.js';
import { startFakeRedis, sbx, tempDir } from './test-support.js';

describe('sbx doctor', () => {
  let home: { dir: string; remove: () => Promise<void> };

  beforeEach(async () => {
    home = await tempDir('doctor-cmd');
  });
  afterEach(async () => {
    await home.remove();
  });

  it('--json lists every check with ok/fail/skip, and a fix for each failure', async () => {
    const redis = await startFakeRedis();
    try {
      const run = await sbx(['doctor', '--json'], {
        cwd: home.dir,
        env: {
          SBX_HOME: home.dir,
          SBX_REDIS_URL: redis.url,
          DOCKER_HOST: `unix://${path.join(home.dir, 'docker.sock')}`,
        },
      });
      const report = JSON.parse(run.stdout) as DoctorReport;
      expect(run.code).toBe(0);
      expect(report).toMatchObject({ ok: true, provider: '@sbx/local' });
      for (const check of report.checks) {
        expect(['ok', 'fail', 'skip']).toContain(check.status);
        if (check.status === 'fail') expect(check.fix).toEqual(expect.any(String));
      }
      const status = (id: string) => report.checks.find((c: DoctorCheck) => c.id === id)?.status;
      expect(status('node')).toBe('ok');
      expect(status('config')).toBe('ok');
      expect(status('provider')).toBe('ok');
      expect(status('local.shell')).toBe('ok');
      expect(status('local.data-dir')).toBe('ok');
      expect(status('ownership.redis')).toBe('ok');
      // This repository installs @sbx/aio: its Docker check ran against the missing socket.
      expect(report.checks.find((c) => c.id === 'aio.docker')).toMatchObject({
        status: 'fail',
        required: false,
      });
    } finally {
      await redis.close();
    }
  });

  it('exits 1 when a required check fails, and prints the fix under the row', async () => {
    const run = await sbx(['doctor', '--provider', '@acme/not-installed'], {
      cwd: home.dir,
      env: { SBX_HOME: home.dir },
    });
    expect(run.code).toBe(1);
    const lines = run.stdout.split('\n');
    const row = lines.findIndex((l) => /^FAIL\s+provider loads\s/.test(l));
    expect(row).toBeGreaterThan(0);
    expect(lines[row + 1]).toMatch(/^\s+fix: npm install @acme\/not-installed$/);
    expect(lines.at(-2)).toMatch(/^1 required check failed/);
  });
});

describe('renderDoctorReport', () => {
  const check = (
    partial: Partial<DoctorCheck> & Pick<DoctorCheck, 'id' | 'status'>,
  ): DoctorCheck => ({
    group: 'sbx',
    title: partial.id,
    required: true,
    detail: 'd',
    ...partial,
  });

  it('marks required failures FAIL, optional ones fail, and counts both', () => {
    const lines = renderDoctorReport({
      ok: false,
      provider: '@sbx/local',
      configFile: undefined,
      checks: [
        check({ id: 'node', status: 'ok' }),
        check({ id: 'config', status: 'fail', fix: 'repair it' }),
        check({
          id: 'e2b.api-key',
          group: '@sbx/e2b',
          title: 'E2B_API_KEY set',
          status: 'fail',
          required: false,
          fix: 'export it',
        }),
        check({ id: 'ownership.redis', group: 'ownership', status: 'skip' }),
      ],
    });
    expect(lines).toEqual([
      'sbx doctor: provider @sbx/local, config (built-in defaults)',
      '',
      'STATUS  CHECK                       DETAIL',
      'ok      node                        d',
      'FAIL    config                      d',
      '        fix: repair it',
      'fail    @sbx/e2b: E2B_API_KEY set   d',
      '        fix: export it',
      'skip    ownership: ownership.redis  d',
      '',
      '1 required check failed (1 failed check concerns installed packages the configuration does not use)',
    ]);
  });
});
