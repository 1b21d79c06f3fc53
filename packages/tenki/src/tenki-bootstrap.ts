import { shellQuote } from '@sbx/core';
import type { Logger } from '@sbx/core';
import { TENKI_BOOTSTRAP_TIMEOUT_SECONDS } from './tenki-config.js';
import type { TenkiSandbox } from './tenki-sandbox.js';

/** Printed last by the bootstrap script: its absence means the bootstrap did not complete. */
export const BOOTSTRAP_MARKER = 'SBX_BOOTSTRAP_OK';

/**
 * The best-effort bootstrap: the user-data directories under HOME, and, when `sudo` works without
 * a password and nothing real sits at `/mnt/user-data`, a symlink from there to HOME so shell
 * commands that name virtual paths work too. Failures are swallowed here and judged by the marker.
 */
export function bootstrapScript(homeDir: string): string {
  const home = shellQuote(homeDir);
  const dirs = ['workspace', 'uploads', 'outputs']
    .map((d) => shellQuote(`${homeDir}/${d}`))
    .join(' ');
  return [
    `mkdir -p ${dirs} || exit 1`,
    'if command -v sudo >/dev/null 2>&1 && { [ ! -e /mnt/user-data ] || [ -L /mnt/user-data ]; }; then',
    `  sudo -n mkdir -p /mnt 2>/dev/null; sudo -n ln -sfn ${home} /mnt/user-data 2>/dev/null || true`,
    'fi',
    `echo ${BOOTSTRAP_MARKER}`,
  ].join('\n');
}

/**
 * Runs the bootstrap on a new microVM. Best effort: a VM whose bootstrap fails or does not print
 * the marker is still handed out (the agent's file calls use HOME, which exists), with a warning.
 */
export async function bootstrapTenkiSandbox(
  sandbox: TenkiSandbox,
  homeDir: string,
  logger: Logger,
): Promise<void> {
  let problem: unknown;
  try {
    const result = await sandbox.remote.exec(['sh', '-c', bootstrapScript(homeDir)], {
      timeoutSeconds: TENKI_BOOTSTRAP_TIMEOUT_SECONDS,
    });
    const stdout = new TextDecoder().decode(result.stdout);
    if ((result.exitCode ?? 0) !== 0 || !stdout.includes(BOOTSTRAP_MARKER)) {
      const stderr = new TextDecoder().decode(result.stderr).trim();
      problem = `exit code ${String(result.exitCode)}: ${stderr}`;
    }
  } catch (error) {
    problem = error;
  }
  if (problem !== undefined) {
    logger.warn('Tenki sandbox bootstrap did not complete; continuing with it', {
      sandboxId: sandbox.id,
      error: problem,
    });
  }
}
