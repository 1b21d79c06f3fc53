import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { servicesRequired } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { seccompArchOf } from './seccomp-arch.js';
import { seccompProgram } from './seccomp-filter.js';
import { SYSCALL_TABLES, type SyscallName } from './seccomp-syscalls.js';
import { ALWAYS_EPERM, ENOSYS, EPERM } from './seccomp-test-support.js';

/**
 * The filter as the kernel runs it: each probe runs under `bwrap --seccomp 3` with the program on
 * fd 3, and (where the probe is harmless) also without the filter in the same sandbox, to show it
 * is the filter that refuses and not a missing capability. The sandboxes get every capability of
 * their user namespace (`--cap-add ALL`), so nothing but the filter stands between a probe and
 * its call. Destructive probes (mount) run only under the filter.
 */

const OUTPUT_LIMIT = 64 * 1024;
const RUN_TIMEOUT_MS = 60_000;

function unavailableReason(): string | undefined {
  if (process.platform !== 'linux') return `seccomp needs Linux, this is ${process.platform}`;
  if (process.arch !== 'x64' && process.arch !== 'arm64') return `no filter for ${process.arch}`;
  const probe = spawnSync(
    'bwrap',
    ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--cap-add', 'ALL', '--', 'true'],
    { encoding: 'utf8', timeout: RUN_TIMEOUT_MS },
  );
  if (probe.error) return `bwrap cannot be run (${probe.error.message}); install bubblewrap`;
  if (probe.status !== 0) {
    return `bwrap --unshare-all fails here (user namespaces unavailable?): ${probe.stderr.trim()}`;
  }
  return undefined;
}

const unavailable = unavailableReason();
if (unavailable) {
  if (servicesRequired()) {
    throw new Error(`bwrap required (CI=true or SBX_REQUIRE_SERVICES=1): ${unavailable}`);
  }
  console.warn(`[sbx] skipping the seccomp tests under bwrap: ${unavailable}`);
}

function resolvePython(): string | undefined {
  const found = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], {
    encoding: 'utf8',
  });
  return found.status === 0 ? found.stdout.trim() || undefined : undefined;
}
const python = unavailable ? undefined : resolvePython();
if (!unavailable && !python) {
  console.warn('[sbx] skipping the seccomp probes written in Python: python3 is not installed');
}
const strace = ['/usr/bin/strace', '/bin/strace'].find((candidate) => existsSync(candidate));
if (!unavailable && !strace) {
  console.warn('[sbx] skipping the ptrace probe through strace: strace is not installed');
}

const arch = unavailable ? 'x86_64' : seccompArchOf(process.arch);
const nr = (name: SyscallName): number => SYSCALL_TABLES[arch].numbers[name];

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function capped(chunks: Buffer[], chunk: Buffer, size: { n: number }): void {
  if (size.n >= OUTPUT_LIMIT) return;
  chunks.push(chunk.subarray(0, OUTPUT_LIMIT - size.n));
  size.n += chunk.length;
}

/** Runs argv in a fresh bubblewrap sandbox, with the filter on fd 3 when `filtered`. */
function sandboxed(argv: readonly string[], filtered: boolean): Promise<Run> {
  const args = [
    '--unshare-all',
    '--die-with-parent',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--cap-add',
    'ALL',
    ...(filtered ? ['--seccomp', '3'] : []),
    '--',
    ...argv,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', args, {
      stdio: ['ignore', 'pipe', 'pipe', filtered ? 'pipe' : 'ignore'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const outSize = { n: 0 };
    const errSize = { n: 0 };
    child.stdout!.on('data', (chunk: Buffer) => capped(out, chunk, outSize));
    child.stderr!.on('data', (chunk: Buffer) => capped(err, chunk, errSize));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    if (filtered) {
      const programFd = child.stdio[3] as Writable;
      // bwrap reads fd 3 to its end before it starts the command; an early exit of bwrap shows as
      // a failed run, which the assertions report with its stderr.
      programFd.once('error', () => undefined);
      programFd.end(seccompProgram());
    }
  });
}

/** Python helpers for calls no common command makes; prints one JSON line. */
const PROBE = String.raw`
import ctypes, json, os, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return {"errno": ctypes.get_errno()} if r == -1 else {"result": r}
kind = sys.argv[1]
rest = [] if kind == "battery" else [int(a) for a in sys.argv[2:]]
if kind == "socket":
    try:
        socket.socket(*rest).close()
        out = {"result": "created"}
    except OSError as e:
        out = {"errno": e.errno}
elif kind == "syscall":
    out = call(*rest)
elif kind == "clone":
    out = call(rest[0], rest[1] | 17, 0, 0, 0, 0)
    if out.get("result") == 0:
        os._exit(0)
    if "result" in out:
        os.waitpid(out["result"], 0)
elif kind == "process_vm_readv":
    src, dst = ctypes.create_string_buffer(b"secret"), ctypes.create_string_buffer(6)
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    local, remote = iovec(ctypes.addressof(dst), 6), iovec(ctypes.addressof(src), 6)
    out = call(rest[0], os.getpid(), ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
elif kind == "io_uring_setup":
    params = ctypes.create_string_buffer(120)
    out = call(rest[0], 1, ctypes.addressof(params))
elif kind == "tiocsti":
    byte = ctypes.create_string_buffer(b"x")
    out = call(rest[0], 0, 0x5412, ctypes.addressof(byte))
elif kind == "battery":
    out = {}
    for name, number in json.loads(sys.argv[2]).items():
        out[name] = call(number, -1, -1, -1, -1, -1, -1)
elif kind == "threads":
    seen = []
    workers = [threading.Thread(target=seen.append, args=(i,)) for i in range(4)]
    for w in workers: w.start()
    for w in workers: w.join()
    out = {"result": len(seen)}
elif kind == "sockets-allowed":
    made = []
    for family, kind_ in ((socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_STREAM),
                          (socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_STREAM)):
        socket.socket(family, kind_ | socket.SOCK_CLOEXEC).close()
        made.append(family)
    a, b = socket.socketpair()
    a.sendall(b"ping")
    made.append(b.recv(4).decode())
    out = {"result": made}
print(json.dumps(out))
`;

async function py(
  filtered: boolean,
  ...args: (string | number)[]
): Promise<Record<string, unknown>> {
  const run = await sandboxed([python!, '-c', PROBE, ...args.map(String)], filtered);
  expect(run.code, `python probe ${args.join(' ')} failed: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

const describeUnderBwrap = describe.skipIf(unavailable !== undefined);
const itWithPython = it.skipIf(!python);

describeUnderBwrap('the seccomp filter under bwrap: refusals', () => {
  it('refuses unshare -U (a new user namespace), which works without the filter', async () => {
    const without = await sandboxed(['unshare', '-U', 'true'], false);
    expect(without.code, without.stderr).toBe(0);
    const confined = await sandboxed(['unshare', '-U', 'true'], true);
    expect(confined.code).not.toBe(0);
    expect(confined.stderr).toMatch(/Operation not permitted/);
  });

  it('refuses unshare -n (a new network namespace), which works without the filter', async () => {
    const without = await sandboxed(['unshare', '-n', 'true'], false);
    expect(without.code, without.stderr).toBe(0);
    const confined = await sandboxed(['unshare', '-n', 'true'], true);
    expect(confined.code).not.toBe(0);
    expect(confined.stderr).toMatch(/Operation not permitted/);
  });

  it.skipIf(!strace)('refuses ptrace (strace true), which works without the filter', async () => {
    const without = await sandboxed([strace!, '-o', '/dev/null', 'true'], false);
    expect(without.code, without.stderr).toBe(0);
    const confined = await sandboxed([strace!, '-o', '/dev/null', 'true'], true);
    expect(confined.code).not.toBe(0);
    expect(confined.stderr).toMatch(
      /PTRACE_TRACEME: Operation not permitted|ptrace.*Operation not permitted/,
    );
  });

  it('refuses mount -t tmpfs even with every capability of the sandbox', async () => {
    // Only under the filter: a mount is a write to the machine's state, never probed unconfined.
    const confined = await sandboxed(['mount', '-t', 'tmpfs', 'x', '/tmp'], true);
    expect(confined.code).not.toBe(0);
    expect(confined.stderr).toMatch(/permission denied|not permitted/i);
  });

  itWithPython.each([
    ['netlink (AF_NETLINK, SOCK_DGRAM)', 16, 2, 0],
    ['packet (AF_PACKET, SOCK_DGRAM)', 17, 2, 0],
    ['raw (AF_INET, SOCK_RAW|SOCK_CLOEXEC, ICMP)', 2, 3 | 0x80000, 1],
    ['legacy packet (AF_INET, SOCK_PACKET)', 2, 10, 0x0300],
  ])('refuses a %s socket, which opens without the filter', async (_what, d, t, p) => {
    expect(await py(false, 'socket', d, t, p)).toEqual({ result: 'created' });
    expect(await py(true, 'socket', d, t, p)).toEqual({ errno: EPERM });
  });

  itWithPython.each([
    // Not confined by the network namespace: reaches the hypervisor's host where there is one.
    ['vsock (AF_VSOCK, SOCK_STREAM)', 40, 1, 0],
    ['crypto API (AF_ALG, SOCK_SEQPACKET)', 38, 5, 0],
    ['XDP (AF_XDP, SOCK_RAW)', 44, 3, 0],
  ])(
    'refuses a %s socket; without the filter the kernel does not answer EPERM',
    async (_what, d, t, p) => {
      // Whether the family exists depends on the kernel: created, or EAFNOSUPPORT, never EPERM.
      expect(await py(false, 'socket', d, t, p)).not.toEqual({ errno: EPERM });
      expect(await py(true, 'socket', d, t, p)).toEqual({ errno: EPERM });
    },
  );

  itWithPython.each([
    ['CLONE_NEWUSER', 0x10000000],
    ['CLONE_NEWNET', 0x40000000],
    ['CLONE_NEWNS', 0x20000],
    ['CLONE_NEWPID', 0x20000000],
    ['CLONE_NEWIPC', 0x08000000],
    ['CLONE_NEWUTS', 0x04000000],
    ['CLONE_NEWCGROUP', 0x02000000],
  ])('refuses clone with %s, which works without the filter', async (_flag, bit) => {
    expect(await py(false, 'clone', nr('clone'), bit)).toMatchObject({
      result: expect.any(Number),
    });
    expect(await py(true, 'clone', nr('clone'), bit)).toEqual({ errno: EPERM });
  });

  itWithPython(
    'refuses keyctl (the session keyring id), which works without the filter',
    async () => {
      const KEYCTL_GET_KEYRING_ID = 0;
      const KEY_SPEC_SESSION_KEYRING = -3;
      const args = [nr('keyctl'), KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0];
      expect(await py(false, 'syscall', ...args)).toMatchObject({ result: expect.any(Number) });
      expect(await py(true, 'syscall', ...args)).toEqual({ errno: EPERM });
    },
  );

  itWithPython('refuses process_vm_readv, which works without the filter', async () => {
    expect(await py(false, 'process_vm_readv', nr('process_vm_readv'))).toEqual({ result: 6 });
    expect(await py(true, 'process_vm_readv', nr('process_vm_readv'))).toEqual({ errno: EPERM });
  });

  itWithPython('refuses io_uring_setup, which works without the filter', async () => {
    expect(await py(false, 'io_uring_setup', nr('io_uring_setup'))).toMatchObject({
      result: expect.any(Number),
    });
    expect(await py(true, 'io_uring_setup', nr('io_uring_setup'))).toEqual({ errno: EPERM });
  });

  itWithPython(
    'refuses TIOCSTI (the kernel answers ENOTTY on a non-terminal without it)',
    async () => {
      const ENOTTY = 25;
      expect(await py(false, 'tiocsti', nr('ioctl'))).toEqual({ errno: ENOTTY });
      expect(await py(true, 'tiocsti', nr('ioctl'))).toEqual({ errno: EPERM });
    },
  );

  itWithPython(
    'answers every unconditionally refused call itself, before the kernel looks at the arguments',
    async () => {
      // Invalid arguments everywhere (-1: bad pointers, fds, flags), so no call can do anything
      // even where nothing refuses it; the kernel then answers with its own argument error.
      const refused: SyscallName[] = [...ALWAYS_EPERM, 'clone3'];
      const numbers = JSON.stringify(Object.fromEntries(refused.map((name) => [name, nr(name)])));
      const confined = await py(true, 'battery', numbers);
      const without = await py(false, 'battery', numbers);
      // The kernel checks the capability first for these (in the initial namespace, which the
      // sandbox never has) and may answer EPERM on its own; the others reject the arguments.
      const capabilityFirst = new Set<SyscallName>([
        'kexec_load',
        'kexec_file_load',
        'init_module',
        'finit_module',
        'delete_module',
        'open_by_handle_at',
      ]);
      for (const name of refused) {
        const expected = name === 'clone3' ? ENOSYS : EPERM;
        expect(confined[name], name).toEqual({ errno: expected });
        if (!capabilityFirst.has(name)) {
          expect(without[name], `${name} without the filter`).not.toEqual({ errno: expected });
        }
      }
    },
  );

  it.skipIf(!python || arch !== 'x86_64')(
    'kills a process that makes an x32 call (getpid), which survives without the filter',
    async () => {
      const X32_GETPID = 0x40000000 | 39;
      // Without the filter the kernel answers (a pid, or ENOSYS where x32 is compiled out) and
      // the probe exits normally, which py() asserts.
      expect(await py(false, 'syscall', X32_GETPID)).toBeTypeOf('object');
      const confined = await sandboxed([python!, '-c', PROBE, 'syscall', String(X32_GETPID)], true);
      // bwrap reports a command killed by a signal as 128 + the signal (SIGSYS = 31).
      expect(confined.code).toBe(128 + 31);
      expect(confined.stdout).toBe('');
    },
  );
});

describeUnderBwrap('the seccomp filter under bwrap: what keeps working', () => {
  it('runs a shell command', async () => {
    const run = await sandboxed(['sh', '-c', 'echo ok'], true);
    expect(run).toMatchObject({ code: 0, stdout: 'ok\n' });
  });

  it('forks and execs (a background job waited for)', async () => {
    const run = await sandboxed(['sh', '-c', 'true & wait $!; echo "waited $?"'], true);
    expect(run).toMatchObject({ code: 0, stdout: 'waited 0\n' });
  });

  it('starts threads in node (clone3 answered ENOSYS, glibc falls back to clone)', async () => {
    const script =
      "const { Worker } = require('node:worker_threads');" +
      'new Worker(\'require("node:worker_threads").parentPort.postMessage(6*7)\', { eval: true })' +
      '.on("message", (m) => console.log("worker " + m));';
    const run = await sandboxed([process.execPath, '-e', script], true);
    expect(run.stdout, run.stderr).toBe('worker 42\n');
    expect(run.code).toBe(0);
  });

  itWithPython('starts threads in python', async () => {
    expect(await py(true, 'threads')).toEqual({ result: 4 });
  });

  itWithPython('opens unix, TCP, UDP and IPv6 sockets and a working socketpair', async () => {
    expect(await py(true, 'sockets-allowed')).toEqual({ result: [1, 2, 2, 10, 'ping'] });
  });
});
