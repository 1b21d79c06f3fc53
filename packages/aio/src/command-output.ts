import { randomBytes } from 'node:crypto';
import { shellQuote } from '@sbx/core';
import type { ExecResult } from '@sbx/core';
import type { BashExecResult, ShellCommandResult } from './aio-api.js';

/**
 * Output assembly for the two ways the sandbox runs commands.
 *
 * `POST /v1/bash/exec` reports stdout, stderr and the exit code separately. `POST /v1/shell/exec`
 * (the persistent shell session) reports one terminal text, so sbx frames the command: it runs
 * `{ eval '<command>'; } 2><tmp file>`, then prints a marker line, the captured stderr, and an
 * exit-status marker. A `trap ... EXIT` prints the same frame when the command ends the shell
 * with `exit N`, so that case still reports `Exit Code: N`. `eval` keeps the command in the
 * session's own shell (a `cd` or `export` persists, as it does in a terminal) and contains a
 * syntax error to the command. The markers carry a random token per command, so command output
 * cannot forge them. When they are missing (a truncated or timed-out answer, or an image that
 * mangles them) the terminal text is returned as stdout and the API's `exit_code` used instead.
 */

export interface CommandOutcome {
  stdout: string;
  stderr: string;
  /** Null when unknown (not reported). */
  exitCode: number | null;
  /** Set when the sandbox stopped waiting for the command. */
  timeout?: { seconds: number; kind: 'hard' | 'idle' };
  /** A final status other than completed or a timeout (e.g. `terminated`). */
  abnormalStatus?: string;
}

/** Same wording as the local sandbox's notice, so agents learn one message. */
function timeoutNotice(seconds: number, kind: 'hard' | 'idle'): string {
  const amount = `${Number.isInteger(seconds) ? String(seconds) : String(Number(seconds))} ${seconds === 1 ? 'second' : 'seconds'}`;
  const guidance =
    'Commands that keep running, such as servers or watchers, block the turn until they are ' +
    'killed: start them in the background with their output redirected, e.g. ' +
    '`your-command > /mnt/user-data/workspace/server.log 2>&1 &`, then check the log.';
  return kind === 'hard'
    ? `Command timed out after ${amount} and was terminated. ${guidance}`
    : `Command produced no new output for ${amount}, so the sandbox stopped waiting for it; it may still be running. ${guidance}`;
}

/**
 * The one text a command returns: stdout; stderr (under `Std Error:` only when there is stdout);
 * then a timeout notice, or else a non-zero exit code on its own line; `(no output)` when all of
 * that is empty.
 */
export function assembleOutput(outcome: CommandOutcome): string {
  let output = outcome.stdout;
  if (outcome.stderr) output = output ? `${output}\nStd Error:\n${outcome.stderr}` : outcome.stderr;
  if (outcome.timeout) {
    const notice = timeoutNotice(outcome.timeout.seconds, outcome.timeout.kind);
    output = output ? `${output}\n${notice}` : notice;
  } else if (outcome.exitCode !== null && outcome.exitCode !== 0) {
    output = `${output}\nExit Code: ${outcome.exitCode}`;
  } else if (outcome.abnormalStatus) {
    output = `${output}\nCommand ended with status ${outcome.abnormalStatus}.`;
  }
  return output || '(no output)';
}

export interface FramedCommand {
  /** The one-line script to send to the shell session. */
  script: string;
  token: string;
}

/** Wraps `command` for the persistent shell (see the module comment). */
export function frameShellCommand(
  command: string,
  token = randomBytes(12).toString('hex'),
): FramedCommand {
  const marker = `__SBX_${token}__`;
  const errFile = `/tmp/.sbx-${token}.err`;
  const emitWith = (suffix: string) =>
    `printf '\\n%s\\n' '${marker}:stderr'; cat ${errFile} 2>/dev/null; rm -f ${errFile}; printf '\\n%s%s%s\\n' '${marker}:exit:' "$__sbx_rc" '${suffix}'`;
  const emit = emitWith('');
  const script = [
    // The EXIT trap frames a command that ends the shell (`exit`), marked so the client knows
    // the session is gone.
    `trap ${shellQuote(`__sbx_rc=$?; ${emitWith(':ended')}`)} EXIT`,
    `{ eval ${shellQuote(command)}; } 2>${errFile}`,
    `__sbx_rc=$?`,
    `trap - EXIT`,
    emit,
    `unset __sbx_rc`,
  ].join('; ');
  return { script, token };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Splits a framed command's terminal text; undefined when the frame is not (all) there. */
export function parseFramedOutput(
  output: string,
  token: string,
): { stdout: string; stderr: string; exitCode: number; endedShell: boolean } | undefined {
  const marker = escapeRegExp(`__SBX_${token}__`);
  const stderrRe = new RegExp(`\\r?\\n${marker}:stderr\\r?\\n`, 'g');
  const exitRe = new RegExp(`\\r?\\n${marker}:exit:(\\d+)(:ended)?\\r?\\n?`, 'g');
  let stderrAt: RegExpExecArray | undefined;
  for (let m = stderrRe.exec(output); m; m = stderrRe.exec(output)) stderrAt = m;
  if (!stderrAt) return undefined;
  exitRe.lastIndex = stderrAt.index + stderrAt[0].length;
  let exitAt: RegExpExecArray | undefined;
  for (let m = exitRe.exec(output); m; m = exitRe.exec(output)) exitAt = m;
  if (!exitAt) return undefined;
  // Text after the frame is late output of something the command left running in the background.
  const late = output.slice(exitAt.index + exitAt[0].length);
  return {
    stdout: output.slice(0, stderrAt.index) + late,
    stderr: output.slice(stderrAt.index + stderrAt[0].length, exitAt.index),
    exitCode: Number(exitAt[1]),
    endedShell: exitAt[2] !== undefined,
  };
}

/** The outcome of a framed command run on a shell session. */
export function shellOutcome(
  result: ShellCommandResult,
  token: string,
  limits: { hardTimeoutSeconds: number | undefined; noChangeTimeoutSeconds: number },
): CommandOutcome {
  const text = result.output ?? '';
  if (result.status === 'hard_timeout') {
    return {
      stdout: text,
      stderr: '',
      exitCode: null,
      timeout: {
        seconds: limits.hardTimeoutSeconds ?? limits.noChangeTimeoutSeconds,
        kind: 'hard',
      },
    };
  }
  if (result.status === 'no_change_timeout') {
    return {
      stdout: text,
      stderr: '',
      exitCode: null,
      timeout: { seconds: limits.noChangeTimeoutSeconds, kind: 'idle' },
    };
  }
  const framed = parseFramedOutput(text, token);
  if (framed) return framed;
  const abnormal =
    result.status !== undefined && result.status !== 'completed' ? result.status : undefined;
  return {
    stdout: text,
    stderr: '',
    exitCode: result.exitCode,
    ...(abnormal ? { abnormalStatus: abnormal } : {}),
  };
}

/** The outcome of a `bash/exec` call. */
export function bashOutcome(result: BashExecResult, hardTimeoutSeconds: number): CommandOutcome {
  const base = {
    stdout: result.stdout ?? '',
    stderr: result.stderr ?? '',
    exitCode: result.exitCode,
  };
  if (result.status === 'timed_out' || result.status === 'hard_timeout') {
    return { ...base, exitCode: null, timeout: { seconds: hardTimeoutSeconds, kind: 'hard' } };
  }
  if (result.status !== undefined && result.status !== 'completed' && result.exitCode === null) {
    return { ...base, abnormalStatus: result.status };
  }
  return base;
}

/**
 * The structured result of an outcome. Its text form (`execResultText`) is exactly
 * `assembleOutput(outcome)`: the image's own endings (a limit on silence that left the command
 * running, a status such as `terminated`) travel as the result's notice.
 */
export function outcomeResult(outcome: CommandOutcome, startedAt: number): ExecResult {
  const base = {
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    durationMs: performance.now() - startedAt,
    truncated: false,
  };
  if (outcome.timeout) {
    return {
      ...base,
      exitCode: null,
      timedOut: true,
      timeoutMs: outcome.timeout.seconds * 1000,
      notice: timeoutNotice(outcome.timeout.seconds, outcome.timeout.kind),
    };
  }
  const abnormal =
    outcome.abnormalStatus !== undefined && (outcome.exitCode === null || outcome.exitCode === 0);
  return {
    ...base,
    exitCode: abnormal ? null : outcome.exitCode,
    timedOut: false,
    ...(abnormal ? { notice: `Command ended with status ${outcome.abnormalStatus}.` } : {}),
  };
}
