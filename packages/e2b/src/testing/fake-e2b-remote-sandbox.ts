import path from 'node:path';
import type {
  E2BCommandHandle,
  E2BCommandOptions,
  E2BCommandResult,
  E2BEntryInfo,
  E2BRemoteSandbox,
  E2BWriteData,
} from '../e2b-client.js';
import type { FakeE2BOp, FakeVmRecord } from './fake-e2b-client.js';
import { fakeErrors, sdkError } from './fake-e2b-errors.js';
import type { LocalVm, LocalVmProcessControl, LocalVmRunResult } from './local-vm.js';

/** Runs one operation through the control plane's gate and failure rules. */
export type FakeOpRunner = <T>(
  op: FakeE2BOp,
  sandboxId: string | undefined,
  detail: unknown,
  real: () => Promise<T>,
) => Promise<T>;

/**
 * The fake's answer to `create` / `connect`: one connection to a VM, its files and commands over
 * the VM's local directory and processes. Every call goes through `op`, the control plane's gate
 * and failure rules, so tests can hold or fail any of them.
 */
export function fakeRemoteSandbox(record: FakeVmRecord, op: FakeOpRunner): E2BRemoteSandbox {
  const id = record.sandboxId;
  const vm = record.vm;
  // A paused VM's envd does not answer: to a caller it looks as gone as a dead one, until a
  // `connect` resumes it.
  const ensureAlive = (gone: () => Error): void => {
    if (!record.alive || record.paused) throw gone();
  };
  const files = {
    read: ((p: string, opts?: { format?: 'text' | 'bytes' | 'stream' }) =>
      op('read', id, { path: p, format: opts?.format ?? 'text' }, async () => {
        ensureAlive(fakeErrors.envdGone);
        let bytes: Uint8Array;
        try {
          bytes = await vm.readBytes(p);
        } catch {
          throw fakeErrors.fileNotFound(p);
        }
        const format = opts?.format ?? 'text';
        if (format === 'bytes') return bytes;
        if (format === 'stream') {
          return new ReadableStream<Uint8Array>({
            start(controller) {
              const chunk = 64 * 1024;
              for (let i = 0; i < bytes.byteLength; i += chunk) {
                controller.enqueue(bytes.slice(i, i + chunk));
              }
              controller.close();
            },
          });
        }
        return new TextDecoder().decode(bytes);
      })) as E2BRemoteSandbox['files']['read'],
    write: (p: string, data: E2BWriteData) =>
      op('write', id, { path: p }, async () => {
        ensureAlive(fakeErrors.envdGone);
        await vm.writeBytes(p, await toBytes(data));
        return { name: path.posix.basename(p), path: p, type: 'file' };
      }),
    makeDir: (p: string) =>
      op('makeDir', id, { path: p }, async () => {
        ensureAlive(fakeErrors.envdGone);
        return vm.makeDir(p);
      }),
    remove: (p: string) =>
      op('remove', id, { path: p }, async () => {
        ensureAlive(fakeErrors.envdGone);
        await vm.remove(p);
      }),
    getInfo: (p: string) =>
      op('getInfo', id, { path: p }, async (): Promise<E2BEntryInfo> => {
        ensureAlive(fakeErrors.envdGone);
        try {
          const info = await vm.info(p);
          return { name: path.posix.basename(p), path: p, ...info };
        } catch {
          throw fakeErrors.fileNotFound(p);
        }
      }),
  };
  return {
    sandboxId: id,
    commands: fakeCommands(id, vm, ensureAlive, op),
    files,
    setTimeout: (timeoutMs: number) =>
      op('setTimeout', id, timeoutMs, async () => {
        ensureAlive(() => fakeErrors.notFound(id));
        record.timeoutMs = timeoutMs;
      }),
    kill: () =>
      op('kill', id, undefined, async () => {
        const wasAlive = record.alive;
        record.alive = false;
        return wasAlive;
      }),
    close: () => op('close', id, undefined, async () => undefined),
  };
}

/** `commands` of one VM: foreground runs, background handles and their stdin and kill. */
function fakeCommands(
  id: string,
  vm: LocalVm,
  ensureAlive: (error: () => Error) => void,
  op: FakeOpRunner,
): E2BRemoteSandbox['commands'] {
  // Processes are the VM's (`vm.processes`), not this connection's: another client of the same
  // VM lists and connects to them, as with envd.
  const outcome = (result: LocalVmRunResult): E2BCommandResult => {
    if (result.timedOut) throw fakeErrors.commandTimeout();
    if (result.exitCode !== 0) {
      throw sdkError('CommandExitError', `exit status ${result.exitCode}`, {
        exitCode: result.exitCode,
        stdout: result.stdout,
        stderr: result.stderr,
      });
    }
    return { exitCode: 0, stdout: result.stdout, stderr: result.stderr };
  };
  const start = (cmd: string, opts: E2BCommandOptions & { stdin?: boolean }) => {
    let started!: (control: LocalVmProcessControl) => void;
    const ready = new Promise<LocalVmProcessControl>((resolve) => (started = resolve));
    const finished = vm
      .run(cmd, { ...opts, timeoutMs: opts.timeoutMs ?? 60_000, onStart: (c) => started(c) })
      .then(outcome);
    return { ready, finished };
  };
  const control = (pid: number): LocalVmProcessControl => {
    const found = vm.processes.get(pid);
    if (!found) throw sdkError('NotFoundError', `process with pid ${pid} not found`);
    return found.control;
  };
  const run = ((
    cmd: string,
    opts: E2BCommandOptions & { background?: boolean; stdin?: boolean } = {},
  ) =>
    op('run', id, { cmd, ...opts }, async () => {
      ensureAlive(fakeErrors.notRunning);
      const { background, ...rest } = opts;
      const { ready, finished } = start(cmd, rest);
      if (!background) return finished;
      finished.catch(() => {});
      const { pid } = await ready;
      const handle: E2BCommandHandle = { pid, wait: () => finished, disconnect: async () => {} };
      return handle;
    })) as E2BRemoteSandbox['commands']['run'];
  return {
    run,
    sendStdin: (pid, data) =>
      op('sendStdin', id, { pid }, async () => {
        control(pid).write(data);
      }),
    closeStdin: (pid) =>
      op('closeStdin', id, { pid }, async () => {
        control(pid).closeStdin();
      }),
    kill: (pid) =>
      op('killProcess', id, { pid }, async () => {
        const found = vm.processes.get(pid);
        if (!found) return false;
        found.control.kill('SIGKILL');
        return true;
      }),
    list: () =>
      op('listProcesses', id, undefined, async () => {
        ensureAlive(fakeErrors.notRunning);
        return [...vm.processes.values()].map((p) => ({
          pid: p.pid,
          cmd: '/bin/bash',
          args: ['-l', '-c', p.command],
          envs: { ...p.envs },
          ...(p.cwd ? { cwd: p.cwd } : {}),
        }));
      }),
    connect: (pid, opts = {}) =>
      op('connectProcess', id, { pid }, async () => {
        ensureAlive(fakeErrors.notRunning);
        const found = vm.processes.get(pid);
        if (!found) throw sdkError('NotFoundError', `process with pid ${pid} not found`);
        const unfollow = found.follow({
          ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
          ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
        });
        const finished = found.ended.then(outcome);
        finished.catch(() => {});
        const handle: E2BCommandHandle = {
          pid,
          wait: () => finished,
          disconnect: async () => {
            unfollow();
          },
        };
        return handle;
      }),
  };
}

async function toBytes(data: E2BWriteData): Promise<Uint8Array> {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (data instanceof Blob) return new Uint8Array(await data.arrayBuffer());
  const chunks: Uint8Array[] = [];
  const reader = data.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
