import { shellQuote } from '@sbx/core';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { commandExitResult, errorMessage } from './e2b-errors.js';

export const BOOTSTRAP_MARKER = 'BOOTSTRAP_OK';

/**
 * Materialises the virtual layout inside a VM: the home sub-directories, and `/mnt/user-data` and
 * `/mnt/acp-workspace` as links into the home directory (only where nothing real sits there
 * already, so a template that mounts them is left alone). `/mnt/skills` is created by uploads.
 */
export function bootstrapScript(homeDir: string): string {
  const home = shellQuote(homeDir);
  const acp = shellQuote(`${homeDir}/acp-workspace`);
  return [
    'set -e',
    `mkdir -p ${home}/workspace ${home}/uploads ${home}/outputs ${acp}`,
    `if [ ! -e /mnt/user-data ] || [ -L /mnt/user-data ]; then sudo mkdir -p /mnt && sudo ln -sfn ${home} /mnt/user-data; fi`,
    `if [ ! -e /mnt/acp-workspace ] || [ -L /mnt/acp-workspace ]; then sudo ln -sfn ${acp} /mnt/acp-workspace; fi`,
    'sudo chmod a+rx /mnt 2>/dev/null || true',
    `echo ${BOOTSTRAP_MARKER}`,
  ].join('\n');
}

/**
 * Runs the bootstrap; `undefined` on success, else the failure (an `Error`). Success needs exit
 * status 0 and the marker on stdout: a shell that silently skipped the script is not ready.
 */
export async function runBootstrap(
  remote: E2BRemoteSandbox,
  homeDir: string,
): Promise<Error | undefined> {
  let exitCode: number;
  let stdout: string;
  let stderr: string;
  try {
    ({ exitCode, stdout, stderr } = await remote.commands.run(bootstrapScript(homeDir), {
      timeoutMs: 60_000,
    }));
  } catch (error) {
    const exited = commandExitResult(error);
    if (exited === undefined) {
      return new Error(`e2b bootstrap script raised: ${errorMessage(error)}`, { cause: error });
    }
    ({ exitCode, stdout, stderr } = exited);
  }
  if (exitCode === 0 && stdout.includes(BOOTSTRAP_MARKER)) return undefined;
  return new Error(
    `e2b bootstrap script failed (exit ${exitCode}): ${stderr.trim() || stdout.trim() || '(no output)'}`,
  );
}
