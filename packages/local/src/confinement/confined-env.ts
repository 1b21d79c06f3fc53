import { SANDBOX_HOME, SANDBOX_USER_NAME } from './sandbox-identity-files.js';

/** Only the namespace's own directories: a host `PATH` names places that do not exist in it. */
export const CONFINED_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The environment a confined command's policy filters (`sandbox.env_policy`): the host's, with
 * the names that describe the gateway's user and places (`HOME=/root`, its `PATH`, its
 * `TMPDIR`, its cwd) replaced by the sandbox's own. The call's `env` still goes on top.
 */
export function confinedBaseEnv(
  shell: string,
  hostEnv: NodeJS.ProcessEnv = process.env,
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...hostEnv };
  delete env.PWD;
  delete env.OLDPWD;
  return {
    ...env,
    HOME: SANDBOX_HOME,
    USER: SANDBOX_USER_NAME,
    LOGNAME: SANDBOX_USER_NAME,
    SHELL: shell,
    PATH: CONFINED_PATH,
    TMPDIR: '/tmp',
  };
}
