import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('./quiet-build.mjs', import.meta.url));

function quietBuild(...command: string[]) {
  return spawnSync(process.execPath, [SCRIPT, '--', ...command], { encoding: 'utf8' });
}

describe('quiet-build (the build step of npm run demo)', () => {
  it('prints two lines, not the build log, when the build succeeds', () => {
    const run = quietBuild(
      process.execPath,
      '-e',
      'for (let i = 0; i < 300; i++) console.log("tsup line " + i)',
    );
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toContain('tsup line');
    expect(run.stderr.trim().split('\n')).toHaveLength(2);
  });

  it('prints the whole log and fails with the build status when the build fails', () => {
    const run = quietBuild(
      process.execPath,
      '-e',
      'console.log("the real error"); process.exit(3)',
    );
    expect(run.status).toBe(3);
    expect(run.stderr).toContain('the real error');
    expect(run.stderr).toContain('build failed (exit 3)');
  });
});
