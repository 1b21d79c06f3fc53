import type http from 'node:http';
import type { StandinVm } from './e2b-standin-server.js';
import type { LocalVm, LocalVmRunResult } from './local-vm.js';
import { envelope, json, readBody } from './standin-http.js';

/**
 * envd's `process.Process` service as the stand-in serves it, over the VM's own process table
 * (`LocalVm.processes`), so every client of one VM sees the same processes, as with envd:
 *
 * - `Start` (server-streaming): start, data and end events, then end of stream;
 *   `Connect-Timeout-Ms` ends a run with `deadline_exceeded`;
 * - `Connect` (server-streaming): a start event, then the running command's output from now on
 *   and its end; `not_found` in the end of stream when no such pid runs;
 * - `List` (unary): the running commands with their `cmd`, `args`, `envs`, `cwd`;
 * - `SendInput` (stdin bytes, base64 in JSON), `CloseStdin`, `SendSignal` (unary, by pid).
 */
export async function processRpc(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  rpc: string,
  vm: LocalVm,
  record: StandinVm,
): Promise<void> {
  switch (rpc) {
    case 'Start':
      return processStart(req, res, vm, record);
    case 'Connect':
      return processConnect(req, res, vm, record);
    case 'List':
      await readBody(req);
      return json(res, 200, {
        processes: [...vm.processes.values()].map((p) => ({
          pid: p.pid,
          // envd reports what it started: the SDK's `/bin/bash -l -c <command>`.
          config: {
            cmd: '/bin/bash',
            args: ['-l', '-c', p.command],
            envs: p.envs,
            ...(p.cwd ? { cwd: p.cwd } : {}),
          },
        })),
      });
    default:
      return processUnary(req, res, rpc, vm);
  }
}

async function processUnary(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  rpc: string,
  vm: LocalVm,
): Promise<void> {
  const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
    process?: { pid?: number };
    input?: { stdin?: string };
    signal?: string;
  };
  const pid = Number(body.process?.pid);
  const control = vm.processes.get(pid)?.control;
  if (!control) {
    return json(res, 404, { code: 'not_found', message: `process with pid ${pid} not found` });
  }
  switch (rpc) {
    case 'SendInput':
      control.write(Buffer.from(body.input?.stdin ?? '', 'base64'));
      return json(res, 200, {});
    case 'CloseStdin':
      control.closeStdin();
      return json(res, 200, {});
    case 'SendSignal': {
      const signal = body.signal === 'SIGNAL_SIGTERM' ? 'SIGTERM' : 'SIGKILL';
      control.kill(signal);
      return json(res, 200, {});
    }
    default:
      return json(res, 501, {
        code: 'unimplemented',
        message: `${rpc} is not part of the stand-in`,
      });
  }
}

async function streamRequest<T>(req: http.IncomingMessage): Promise<T> {
  const raw = await readBody(req);
  const length = raw.readUInt32BE(1);
  return JSON.parse(raw.subarray(5, 5 + length).toString('utf8')) as T;
}

const dataEvent = (stream: 'stdout' | 'stderr', d: string): Buffer =>
  envelope(0, { event: { data: { [stream]: Buffer.from(d).toString('base64') } } });

/** `ownDeadline`: the stream's own `Connect-Timeout-Ms` ended the command (a `Start` only). */
function endEvents(res: http.ServerResponse, result: LocalVmRunResult, ownDeadline: boolean): void {
  if (ownDeadline && result.timedOut) {
    res.end(envelope(2, { error: { code: 'deadline_exceeded', message: 'deadline_exceeded' } }));
    return;
  }
  res.write(
    envelope(0, {
      event: {
        end: { exitCode: result.exitCode, exited: true, status: `exit status ${result.exitCode}` },
      },
    }),
  );
  res.end(envelope(2, {}));
}

async function processStart(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  vm: LocalVm,
  record: StandinVm,
): Promise<void> {
  const request = await streamRequest<{
    process: { cmd: string; args?: string[]; envs?: Record<string, string>; cwd?: string };
    stdin?: boolean;
  }>(req);
  const args = request.process.args ?? [];
  // The SDK always starts `/bin/bash -l -c <cmd>`; the stand-in runs the command itself.
  const command = args[args.length - 1] ?? '';
  const timeoutHeader = Number(req.headers['connect-timeout-ms'] ?? 0);
  res.writeHead(200, { 'content-type': 'application/connect+json' });
  const result = await vm.run(command, {
    ...(request.process.envs ? { envs: request.process.envs } : {}),
    ...(request.process.cwd ? { cwd: request.process.cwd } : {}),
    ...(timeoutHeader > 0 ? { timeoutMs: timeoutHeader } : {}),
    stdin: request.stdin === true,
    // The pid reported is the command's real one, so a `kill` run in the VM reaches it, as in E2B.
    onStart: (control) => res.write(envelope(0, { event: { start: { pid: control.pid } } })),
    onStdout: (d) => res.write(dataEvent('stdout', d)),
    onStderr: (d) => res.write(dataEvent('stderr', d)),
  });
  if (!record.alive) {
    res.destroy();
    return;
  }
  endEvents(res, result, true);
}

async function processConnect(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  vm: LocalVm,
  record: StandinVm,
): Promise<void> {
  const request = await streamRequest<{ process?: { pid?: number } }>(req);
  const pid = Number(request.process?.pid);
  res.writeHead(200, { 'content-type': 'application/connect+json' });
  const found = vm.processes.get(pid);
  if (!found) {
    res.end(
      envelope(2, { error: { code: 'not_found', message: `process with pid ${pid} not found` } }),
    );
    return;
  }
  res.write(envelope(0, { event: { start: { pid } } }));
  const unfollow = found.follow({
    onStdout: (d) => res.write(dataEvent('stdout', d)),
    onStderr: (d) => res.write(dataEvent('stderr', d)),
  });
  // The client disconnecting stops the stream, not the command.
  res.on('close', unfollow);
  const result = await found.ended;
  unfollow();
  if (res.destroyed) return;
  if (!record.alive) {
    res.destroy();
    return;
  }
  endEvents(res, result, false);
}
