import { execResultText } from '../contract/exec-result-text.js';
import type { Sandbox } from '../contract/sandbox.js';
import type {
  ProcessExit,
  ProcessHandle,
  ProcessInfo,
  ProcessOutput,
} from '../contract/sandbox-processes.js';
import { redactSecrets } from '../config/env-policy.js';
import { ProcessNotFoundError } from '../errors/process-errors.js';
import { isSbxError } from '../errors/errors.js';
import { maskHostPaths } from './local-sandbox-guard.js';
import { resolveToolConfig } from './tool-config.js';
import { requestEnvOf, type ToolContext } from './tool-context.js';
import { describeError } from '../errors/error-inspection.js';
import { commandDetails } from './command-details.js';
import { recordCommandDetails, runToolInvocation } from './tool-invocation.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';
import { sandboxForTool } from './tool-sandbox.js';
import {
  parseToolInput,
  type ProcessKillInput,
  type ProcessListInput,
  type ProcessOutputInput,
  type ProcessWriteInput,
} from './tool-schemas.js';
import { truncateBashOutput } from './truncation.js';
import type { ToolOutputStream } from './tool-output.js';

/** How long process_write waits for an answer by default, and process_kill for the end. */
const DEFAULT_WRITE_WAIT_MS = 1_000;
const KILL_WAIT_MS = 5_000;

/**
 * What the model has read of each process: the tools return only new output, so a poll loop
 * never re-reads (and re-pays for) what it saw. Keyed by the sandbox object, so it goes with it.
 */
const readCursors = new WeakMap<Sandbox, Map<string, number>>();

function cursorOf(sandbox: Sandbox, id: string): number {
  return readCursors.get(sandbox)?.get(id) ?? 0;
}

function setCursor(sandbox: Sandbox, id: string, cursor: number): void {
  let cursors = readCursors.get(sandbox);
  if (!cursors) {
    cursors = new Map();
    readCursors.set(sandbox, cursors);
  }
  cursors.set(id, cursor);
}

function describeEnd(id: string, exit: ProcessExit | undefined, info: ProcessInfo): string {
  if (exit === undefined && info.status === 'running') return `[process ${id} is running]`;
  const ended = exit ?? { exitCode: info.exitCode, timedOut: info.timedOut, signal: info.signal };
  if (ended.timedOut) return `[process ${id} was killed at its time limit]`;
  if (ended.exitCode !== null) return `[process ${id} exited with code ${ended.exitCode}]`;
  if (ended.signal) return `[process ${id} was ended by ${ended.signal}]`;
  return `[process ${id} ended; its exit code is unknown]`;
}

/** How a process stands: ended (with its exit) or still running. */
function endOf(exit: ProcessExit | undefined, info: ProcessInfo): ProcessExit | undefined {
  if (exit !== undefined) return exit;
  if (info.status === 'running') return undefined;
  return {
    exitCode: info.exitCode,
    timedOut: info.timedOut,
    ...(info.signal !== undefined ? { signal: info.signal } : {}),
  };
}

/** Where a process tool's call records its details from: the process and what was read of it. */
interface ProcessRead {
  readonly handle: ProcessHandle;
  readonly exit: ProcessExit | undefined;
  readonly output: ProcessOutput;
}

/** The details of a process as one call read it (`ToolCallResult.command`). */
async function recordProcessRead(
  context: ToolContext,
  sandbox: Sandbox,
  read: ProcessRead,
): Promise<void> {
  const ended = endOf(read.exit, read.handle.info());
  const env = await requestEnvOf(context);
  const maxChars = resolveToolConfig(context.config).bashOutputMaxChars;
  recordCommandDetails(
    await commandDetails(context, sandbox, env, maxChars, {
      exitCode: ended?.exitCode ?? null,
      running: ended === undefined,
      timedOut: ended?.timedOut ?? false,
      ...(ended?.signal !== undefined ? { signal: ended.signal } : {}),
      processId: read.handle.id,
      stdout: read.output.stdout,
      stderr: read.output.stderr,
      truncated: read.output.droppedBytes > 0 || read.output.more,
    }),
  );
}

/** New output since the model's last read, with the process state and any gap. */
async function readNew(
  context: ToolContext,
  sandbox: Sandbox,
  handle: ProcessHandle,
  exit: ProcessExit | undefined,
): Promise<string> {
  const output = await handle.output({ since: cursorOf(sandbox, handle.id) });
  setCursor(sandbox, handle.id, output.cursor);
  await recordProcessRead(context, sandbox, { handle, exit, output });
  const parts: string[] = [];
  if (output.droppedBytes > 0) {
    parts.push(
      `[${output.droppedBytes} bytes of output were dropped before this: the process printed more than its output buffer keeps]`,
    );
  }
  parts.push(output.text === '' ? '(no new output)' : output.text.replace(/\n$/, ''));
  if (output.more) parts.push('[more output is waiting: call process_output again]');
  parts.push(describeEnd(handle.id, exit, handle.info()));
  return parts.join('\n');
}

/** What bash's yield mode runs with besides the command. */
export interface YieldedRun {
  readonly env: Readonly<Record<string, string>>;
  readonly yieldTimeMs: number;
  /** The command as the agent wrote it, when it runs rewritten (for listings). */
  readonly shown?: string;
  /** Gets the output while the call waits; the caller closes it when the call returns. */
  readonly stream?: ToolOutputStream;
}

/**
 * bash's yield mode: the command starts as a background process; if it ends within the yield
 * time the call returns what a one-shot bash call would (and fails the same way), else its output
 * so far and its process id. `stream`, when given, gets the output while the call waits.
 */
export async function runYielded(
  context: ToolContext,
  sandbox: Sandbox,
  started: { readonly command: string; readonly cwd?: string },
  run: YieldedRun,
): Promise<string> {
  const { env, yieldTimeMs, shown, stream } = run;
  // Listings show the command as the agent wrote it (virtual paths), not as it runs.
  const handle = await sandbox.processes.start(started.command, {
    ...(Object.keys(env).length > 0 ? { env } : {}),
    ...(started.cwd !== undefined ? { cwd: started.cwd } : {}),
    ...(shown !== undefined && shown !== started.command ? { label: shown } : {}),
    // The caller closes the stream when the call returns; a process left running then streams
    // to no one, and its output is no longer decoded for it (it stays readable with
    // process_output).
    ...(stream
      ? { onStdout: stream.onStdout, onStderr: stream.onStderr, listenUntil: stream.closed }
      : {}),
  });
  const exit =
    yieldTimeMs > 0
      ? await handle.wait({
          timeoutMs: yieldTimeMs,
          ...(context.signal ? { signal: context.signal } : {}),
        })
      : undefined;
  if (exit !== undefined) {
    const output = await handle.output();
    setCursor(sandbox, handle.id, output.cursor);
    await recordProcessRead(context, sandbox, { handle, exit, output });
    const result = {
      exitCode: exit.exitCode,
      stdout: output.stdout,
      stderr: output.stderr,
      durationMs: 0,
      truncated: output.droppedBytes > 0,
      timedOut: false,
    };
    const text = execResultText(result);
    return result.exitCode === 0 ? text : toolFailure('COMMAND_FAILED', text);
  }
  const sofar = await readNew(context, sandbox, handle, undefined);
  return (
    `${sofar.replace(/\n\[process [^\]]+ is running\]$/, '')}\n` +
    `[process ${handle.id} is still running after ${yieldTimeMs} ms. Read its output with process_output(process_id="${handle.id}"), send it input with process_write, stop it with process_kill.]`
  );
}

/** The shared frame of the four process tools: opt-in check, sandbox, lookup, text hygiene. */
async function withProcess(
  context: ToolContext,
  processId: string | undefined,
  run: (sandbox: Sandbox, handle: ProcessHandle | undefined) => Promise<string>,
): Promise<string> {
  const config = resolveToolConfig(context.config);
  if (!config.processTools) {
    return toolFailure(
      ToolErrorCode.UNKNOWN_TOOL,
      'Error: The process tools are not enabled here; run commands with bash without yield_time_ms',
    );
  }
  const acquired = await sandboxForTool(context);
  if (!acquired.ok) return acquired.error;
  const sandbox = acquired.sandbox;
  let text: string;
  try {
    let handle: ProcessHandle | undefined;
    if (processId !== undefined) {
      handle = await sandbox.processes.get(processId);
      if (!handle) throw new ProcessNotFoundError(processId);
    }
    text = await run(sandbox, handle);
  } catch (err) {
    text = isSbxError(err)
      ? toolFailure(err.code, `Error: ${err.message}`)
      : toolFailure(ToolErrorCode.UNEXPECTED, `Error: Unexpected error: ${describeError(err)}`);
  }
  const masked = await maskHostPaths(context, sandbox, text);
  return truncateBashOutput(
    redactSecrets(masked, await requestEnvOf(context)),
    config.bashOutputMaxChars,
  );
}

function waitFor(handle: ProcessHandle, ms: number, context: ToolContext) {
  if (ms <= 0) return Promise.resolve(undefined);
  return handle.wait({ timeoutMs: ms, ...(context.signal ? { signal: context.signal } : {}) });
}

/** `process_output`: what a yielded process printed since the last read, and its state. */
export function processOutputTool(
  context: ToolContext,
  input: ProcessOutputInput,
): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('process_output', input);
    if (!parsed.ok) return parsed.error;
    const { process_id: id, wait_ms: waitMs } = parsed.value;
    return withProcess(context, id, async (sandbox, handle) => {
      const exit = await waitFor(handle!, waitMs ?? 0, context);
      return readNew(context, sandbox, handle!, exit);
    });
  });
}

/** `process_write`: input to a yielded process, then what it printed in answer. */
export function processWriteTool(context: ToolContext, input: ProcessWriteInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('process_write', input);
    if (!parsed.ok) return parsed.error;
    const { process_id: id, input: text, wait_ms: waitMs } = parsed.value;
    return withProcess(context, id, async (sandbox, handle) => {
      // A process that does not read its input must not hold the call: the write waits as long
      // as the call would for an answer, then fails typed, saying how much was taken.
      const bound = typeof waitMs === 'number' && waitMs > 0 ? waitMs : DEFAULT_WRITE_WAIT_MS;
      await handle!.write(text, { timeoutMs: bound });
      const exit = await waitFor(handle!, waitMs ?? DEFAULT_WRITE_WAIT_MS, context);
      return readNew(context, sandbox, handle!, exit);
    });
  });
}

/** `process_kill`: signals a yielded process and reports how it ended. */
export function processKillTool(context: ToolContext, input: ProcessKillInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('process_kill', input);
    if (!parsed.ok) return parsed.error;
    const { process_id: id, signal } = parsed.value;
    return withProcess(context, id, async (sandbox, handle) => {
      await handle!.kill(signal);
      const exit = await waitFor(handle!, KILL_WAIT_MS, context);
      return readNew(context, sandbox, handle!, exit);
    });
  });
}

/** Characters of a command `process_list` shows. */
const LISTED_COMMAND_CHARS = 80;
/** Longest host path a command can hold (PATH_MAX): masking looks this far past what is shown. */
const LONGEST_HOST_PATH = 4096;

/**
 * A command as one line of `process_list`: host paths masked and secrets redacted before it is
 * cut to width, so a cut never lands inside a host path; only the part that can reach the shown
 * width (plus the longest path) is masked, whatever the command's length; line ends are shown as
 * spaces, so a command is one line.
 */
async function listedCommand(
  context: ToolContext,
  sandbox: Sandbox,
  command: string,
  env: Readonly<Record<string, string>>,
): Promise<string> {
  const head = command.slice(0, LISTED_COMMAND_CHARS + LONGEST_HOST_PATH);
  const masked = redactSecrets(await maskHostPaths(context, sandbox, head), env);
  const flat = masked.replace(/[\r\n]+/g, ' ');
  const cut = flat.length > LISTED_COMMAND_CHARS || head.length < command.length;
  return cut ? `${flat.slice(0, LISTED_COMMAND_CHARS - 3)}...` : flat;
}

function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s` : `${Math.round(s / 60)}m`;
}

/** `process_list`: the sandbox's yielded processes, a line each. */
export function processListTool(context: ToolContext, input: ProcessListInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('process_list', input);
    if (!parsed.ok) return parsed.error;
    return withProcess(context, undefined, async (sandbox) => {
      const all = await sandbox.processes.list();
      if (all.length === 0) return '(no processes)';
      const now = Date.now();
      const env = await requestEnvOf(context);
      const lines: string[] = [];
      for (const p of all) {
        const state =
          p.status === 'running'
            ? 'running'
            : p.exitCode !== null
              ? `exited ${p.exitCode}`
              : `ended ${p.signal ?? '?'}`;
        const command = await listedCommand(context, sandbox, p.command, env);
        lines.push(`${p.id}\t${state}\t${age((p.endedAt ?? now) - p.startedAt)}\t${command}`);
      }
      return lines.join('\n');
    });
  });
}
