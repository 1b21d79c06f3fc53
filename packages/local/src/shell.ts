import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { SandboxRuntimeError } from '@sbx/core';

/** Absolute candidates first (a user's PATH must not pick the shell), then `sh` from PATH. */
export const POSIX_SHELL_CANDIDATES: readonly string[] = ['/bin/zsh', '/bin/bash', '/bin/sh', 'sh'];

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    // Missing or not executable: simply not a candidate.
    return false;
  }
}

async function whichOnPath(name: string, envPath: string | undefined): Promise<string | undefined> {
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    if (await isExecutableFile(file)) return file;
  }
  return undefined;
}

/**
 * The first usable shell of `candidates`: an absolute candidate must be an executable file, a bare
 * name is looked up on `PATH`. Throws `SandboxRuntimeError` when none is usable.
 */
export async function findShell(
  candidates: readonly string[] = POSIX_SHELL_CANDIDATES,
  envPath: string | undefined = process.env.PATH,
): Promise<string> {
  for (const candidate of candidates) {
    if (path.isAbsolute(candidate)) {
      if (await isExecutableFile(candidate)) return candidate;
    } else {
      const found = await whichOnPath(candidate, envPath);
      if (found) return found;
    }
  }
  throw new SandboxRuntimeError(
    `No suitable shell executable found. Tried ${candidates.join(', ')}; install a POSIX shell or set the shell option.`,
  );
}

/**
 * Arguments for running `command` with `shell` (POSIX shells take `-c`). bash also gets
 * `--norc`: Node's piped stdin is a socket, and bash takes a socket on stdin for a remote shell
 * and sources ~/.bashrc (a host's rc may run anything: pyenv waits a minute on a stale lock).
 */
export function shellArgs(shell: string, command: string): string[] {
  return path.basename(shell) === 'bash' ? ['--norc', '-c', command] : ['-c', command];
}

/** Argv for running `command` with `shell`. */
export function shellArgv(shell: string, command: string): [string, string[]] {
  return [shell, shellArgs(shell, command)];
}
