import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The name of the sandbox's user inside the namespace, whatever its number. */
export const SANDBOX_USER_NAME = 'sandbox';
/** `HOME` of a confined command: its private `/tmp` (writable, size-limited, the thread's own). */
export const SANDBOX_HOME = '/tmp';
export const SANDBOX_HOSTNAME = 'sandbox';

/**
 * The `/etc` files a confined command gets instead of the host's: the host's `passwd` and
 * `group` name every host account (and `hosts` every internal name), none of which the sandbox
 * has any business knowing. What programs need is the sandbox's own user (`id`, `whoami`, `git`,
 * `ssh` and Python's `getpass` all look it up) and `localhost`.
 */
export function sandboxIdentityFiles(uid: number, gid: number): Record<string, string> {
  const user = SANDBOX_USER_NAME;
  const rootLines = uid === 0 ? [] : ['root:x:0:0:root:/root:/usr/sbin/nologin'];
  const rootGroup = gid === 0 ? [] : ['root:x:0:'];
  return {
    passwd: [...rootLines, `${user}:x:${uid}:${gid}:${user}:${SANDBOX_HOME}:/bin/sh`, ''].join(
      '\n',
    ),
    group: [...rootGroup, `${user}:x:${gid}:`, ''].join('\n'),
    hosts: `127.0.0.1\tlocalhost ${SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
    'nsswitch.conf': 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n',
    hostname: `${SANDBOX_HOSTNAME}\n`,
  };
}

/**
 * Writes the files once into `dir` (created `0755`, files `0644`: bubblewrap, running as the
 * sandbox user, must read them to bind them), each through a temporary name and a rename, so a
 * namespace starting meanwhile never binds a half-written file. Returns their host paths by name.
 */
export async function writeSandboxIdentityFiles(
  dir: string,
  uid: number,
  gid: number,
): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const out: Record<string, string> = {};
  for (const [name, content] of Object.entries(sandboxIdentityFiles(uid, gid))) {
    const file = path.join(dir, name);
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, content, { mode: 0o644 });
    await rename(temporary, file);
    out[name] = file;
  }
  return out;
}
