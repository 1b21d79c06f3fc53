import {
  InvalidArgumentError,
  type ToolCallResult,
  type ToolOutputListener,
  type ToolRunner,
} from '@sbx/core';
import type { ExecCommandArgs, WriteStdinArgs } from '@openai/agents/sandbox';

/**
 * Most a SandboxAgent's `yield_time_ms` waits here: sbx's own bound on a yield (the process tools'
 * `MAX_YIELD_TIME_MS`), so a model cannot park a call for longer than a process tool could.
 */
export const MAX_AGENT_YIELD_MS = 600_000;

/** Ctrl-C as `write_stdin` sends it: the SDK's way to interrupt a session. */
const CTRL_C = '\u0003';

/**
 * A session id as the SDK has it (a number) from sbx's process id (`p<digits>`), and back. The
 * process id comes from sbx's own table; the number from the model, checked before it names one.
 */
export function sessionIdOf(processId: string | undefined): number | undefined {
  if (processId === undefined) return undefined;
  const match = /^p(\d{1,15})$/.exec(processId);
  return match ? Number(match[1]) : undefined;
}

function processIdOf(sessionId: unknown): string {
  if (typeof sessionId !== 'number' || !Number.isSafeInteger(sessionId) || sessionId < 0) {
    throw new InvalidArgumentError('write_stdin: session_id must be a non-negative integer');
  }
  return `p${sessionId}`;
}

function yieldOf(ms: unknown, fallback: number): number {
  if (ms === undefined || ms === null) return fallback;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new InvalidArgumentError('yield_time_ms must be a non-negative number');
  }
  return Math.min(Math.floor(ms), MAX_AGENT_YIELD_MS);
}

/**
 * An answer in the SDK's exec format: a session id while the process runs (what `write_stdin`
 * then takes), else its exit code, then the output of the calls made for it (each masked,
 * redacted and bounded by sbx). `last` is the call whose state is reported.
 */
export function execResponse(last: ToolCallResult, output: string, started: number): string {
  const command = last.command;
  const lines = [`Wall time: ${((Date.now() - started) / 1000).toFixed(4)} seconds`];
  const sessionId = command?.running ? sessionIdOf(command.processId) : undefined;
  if (sessionId !== undefined) lines.push(`Process running with session ID ${sessionId}`);
  else if (command && command.exitCode !== null) {
    lines.push(`Process exited with code ${command.exitCode}`);
  }
  lines.push('Output:');
  lines.push(output);
  return lines.join('\n');
}

const outputOf = (result: ToolCallResult): string =>
  result.command ? result.command.stdout + result.command.stderr : result.text;

/**
 * `exec_command` with the process tools on: sbx's `bash` in yield mode, so a command still running
 * after `yield_time_ms` comes back with a session id.
 */
export async function execYielded(
  runner: ToolRunner,
  args: ExecCommandArgs,
  onOutput: ToolOutputListener | undefined,
): Promise<string> {
  const started = Date.now();
  const result = await runner.call(
    'bash',
    { command: args.cmd, yield_time_ms: yieldOf(args.yieldTimeMs, 10_000) },
    { onOutput },
  );
  // A failure before the command ran (a refused argument, no sandbox) is sbx's text as it is.
  if (!result.command) return result.text;
  return execResponse(result, outputOf(result), started);
}

/**
 * `write_stdin`: the characters to the session's standard input (`process_write`), or a poll
 * (`process_output`) when there are none; Ctrl-C interrupts it (SIGINT, as the SDK's own local
 * client does for a session without a terminal) after the text before it is written.
 */
export async function writeStdin(runner: ToolRunner, args: WriteStdinArgs): Promise<string> {
  const started = Date.now();
  const processId = processIdOf(args.sessionId);
  const chars = typeof args.chars === 'string' ? args.chars : '';
  const waitMs = yieldOf(args.yieldTimeMs, 250);
  const interrupt = chars.includes(CTRL_C);
  const text = chars.split(CTRL_C).join('');
  const calls: [string, Record<string, unknown>][] = [];
  if (text.length > 0) {
    calls.push([
      'process_write',
      { process_id: processId, input: text, wait_ms: interrupt ? 0 : waitMs },
    ]);
  }
  if (interrupt) calls.push(['process_kill', { process_id: processId, signal: 'SIGINT' }]);
  if (calls.length === 0)
    calls.push(['process_output', { process_id: processId, wait_ms: waitMs }]);
  let output = '';
  let last: ToolCallResult | undefined;
  for (const [name, input] of calls) {
    const result = await runner.call(name, input);
    // A refusal (no such session, a bad argument) is sbx's text as it is.
    if (!result.command) return result.text;
    output += outputOf(result);
    last = result;
  }
  return last ? execResponse(last, output, started) : output;
}
