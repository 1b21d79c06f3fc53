import { HostBashDisabledError, isSbxError } from '../errors/errors.js';
import type { Sandbox } from '../contract/sandbox.js';
import type { ExecOptions, ExecResult } from '../contract/sandbox-exec.js';
import { execResultText } from '../contract/exec-result-text.js';
import { runYielded } from './process-tools.js';
import { VIRTUAL_WORKSPACE_PATH } from '../paths/virtual-paths.js';
import { redactSecrets } from '../config/env-policy.js';
import { LOCAL_HOST_BASH_DISABLED_MESSAGE } from '../host/host-bash.js';
import {
  isLocalSandbox,
  localToolEnvironment,
  hostPathMasker,
  prepareLocalBashCommand,
} from './local-sandbox-guard.js';
import { resolveToolConfig } from './tool-config.js';
import { requestEnvOf, type ToolContext } from './tool-context.js';
import { describeError } from '../errors/error-inspection.js';
import { commandDetails } from './command-details.js';
import { recordCommandDetails, runToolInvocation, toolOutputListener } from './tool-invocation.js';
import { ToolOutputStream, streamedOutputLimit } from './tool-output.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type BashInput } from './tool-schemas.js';
import { rewriteReach, rewriteThenTruncateMiddle } from './bounded-rewrite.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

/** A bash command as a sandbox is given it: the command text and the directory it starts in. */
export interface WorkspaceCommand {
  readonly command: string;
  readonly cwd?: string;
}

/**
 * Every command starts in the workspace.
 *
 * A local sandbox is given the command exactly as the agent wrote it (virtual paths translated)
 * and the workspace as `cwd`, which the spawn sets: a `cd '<dir>' && ` prefix is read by the
 * shell as `(cd <dir> && a) & b` for `a & b`, so `b` ran in the gateway's own directory. Nothing
 * of ours is composed with the agent's text; the sandbox resolves the virtual workspace through
 * its own mount table, like every other path.
 *
 * A remote sandbox's background process (`mode: 'process'`) gets the same `cwd`. A remote
 * command run to completion keeps a `cd <workspace>; ` prefix: session shells (AIO) keep `cd` and
 * `export` across commands only on the path an explicit `cwd` would leave. The prefix is a
 * constant, complete command ended by `;` (nothing after it changes how it parses) that the
 * command's own shell runs before any part of the agent's text, so no operator in that text
 * (`&`, `||`, a newline) can start a part of it elsewhere; and the remote machine, not the
 * directory, is the boundary there.
 */
export function workspaceCommand(
  context: ToolContext,
  sandbox: Sandbox,
  command: string,
  mode: 'exec' | 'process' = 'exec',
): WorkspaceCommand {
  if (!isLocalSandbox(sandbox)) {
    return mode === 'process'
      ? { command, cwd: VIRTUAL_WORKSPACE_PATH }
      : { command: `cd ${VIRTUAL_WORKSPACE_PATH}; ${command}` };
  }
  const workspace = localToolEnvironment(context, sandbox)?.threadData?.workspacePath;
  return workspace ? { command, cwd: VIRTUAL_WORKSPACE_PATH } : { command };
}

/** The failure codes of a command that ran but did not succeed. */
export const CommandFailureCode = {
  /** The command exited with a non-zero status (or none). */
  COMMAND_FAILED: 'COMMAND_FAILED',
  /** The command was killed, or given up on, at its time limit. */
  COMMAND_TIMEOUT: 'COMMAND_TIMEOUT',
} as const;

/**
 * Records a finished command's outcome for the structured result: a command that exited 0 is a
 * success whatever it printed (`Error: ...` included), and `false` is a failure, decided by the
 * status and never by the text.
 */
export function recordCommandOutcome(result: ExecResult, text: string): string {
  if (result.timedOut) return toolFailure(CommandFailureCode.COMMAND_TIMEOUT, text);
  if (result.exitCode !== 0) return toolFailure(CommandFailureCode.COMMAND_FAILED, text);
  return text;
}

/**
 * `bash`: runs a shell command in the thread's sandbox. On a local sandbox host bash must be enabled
 * and the command passes the best-effort path guard first; output has host paths masked, request
 * secrets redacted, and is middle-truncated to `bashOutputMaxChars`. With `yield_time_ms` (opt-in,
 * `processTools`), a command still running after that time is left running as a background
 * process and the call returns its output so far and its process id. The call's output listener
 * (`ToolCallOptions.onOutput`), if any, gets the output while the command runs.
 */
export function bashTool(context: ToolContext, input: BashInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('bash', input);
    if (!parsed.ok) return parsed.error;
    const { command } = parsed.value;
    const yieldTimeMs = parsed.value.yield_time_ms ?? undefined;
    const config = resolveToolConfig(context.config);
    if (yieldTimeMs !== undefined && !config.processTools) {
      return toolFailure(
        ToolErrorCode.INVALID_ARGUMENTS,
        'Error: Invalid arguments for bash: yield_time_ms: the yield mode is not enabled here; run the command without it',
      );
    }
    const acquired = await sandboxForTool(context);
    if (!acquired.ok) return acquired.error;
    const sandbox = acquired.sandbox;
    let env: Readonly<Record<string, string>> = {};
    let result: string;
    const listener = toolOutputListener();
    let stream: ToolOutputStream | undefined;
    try {
      const local = isLocalSandbox(sandbox);
      // One switch for unconfined host bash: unless the tool configuration says otherwise, a
      // local sandbox built with host bash on (`sandbox.allow_host_bash`) runs commands; an
      // explicit `allowHostBash: false` here still refuses them. A sandbox that confines its
      // commands (bubblewrap) always runs them: the switch is about the host's own shell.
      const explicit = (context.config as { allowHostBash?: boolean } | undefined)?.allowHostBash;
      const sandboxAllows = (sandbox as { allowHostBash?: unknown }).allowHostBash === true;
      const confined = (sandbox as { confined?: unknown }).confined === true;
      if (local && !confined && !(explicit ?? (config.allowHostBash || sandboxAllows))) {
        return toolFailure(
          HostBashDisabledError.CODE,
          `Error: ${LOCAL_HOST_BASH_DISABLED_MESSAGE}`,
        );
      }
      env = await requestEnvOf(context);
      const prepared = prepareLocalBashCommand(context, sandbox, command);
      if (listener) {
        const limit = streamedOutputLimit(config.bashOutputMaxChars);
        stream = await ToolOutputStream.open(context, sandbox, env, limit, listener);
      }
      if (yieldTimeMs !== undefined) {
        const started = workspaceCommand(context, sandbox, prepared, 'process');
        result = await runYielded(context, sandbox, started, {
          env,
          yieldTimeMs,
          shown: command,
          ...(stream ? { stream } : {}),
        });
      } else {
        const full = workspaceCommand(context, sandbox, prepared);
        const options: ExecOptions = {};
        if (full.cwd !== undefined) options.cwd = full.cwd;
        if (Object.keys(env).length > 0) options.env = env;
        if (local) options.timeoutMs = config.bashCommandTimeoutSeconds * 1000;
        if (context.signal) options.signal = context.signal;
        if (context.commandScopeId) options.scopeId = context.commandScopeId;
        if (stream) {
          options.onStdout = stream.onStdout;
          options.onStderr = stream.onStderr;
        }
        const outcome = await sandbox.exec(full.command, options);
        recordCommandDetails(
          await commandDetails(context, sandbox, env, config.bashOutputMaxChars, {
            exitCode: outcome.timedOut ? null : outcome.exitCode,
            running: false,
            timedOut: outcome.timedOut,
            ...(outcome.signal !== undefined ? { signal: outcome.signal } : {}),
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            truncated: outcome.truncated,
          }),
        );
        result = recordCommandOutcome(outcome, execResultText(outcome));
      }
    } catch (err) {
      result = isSbxError(err)
        ? toolFailure(err.code, `Error: ${err.message}`)
        : toolFailure(
            ToolErrorCode.UNEXPECTED,
            `Error: Unexpected error executing command: ${describeError(err)}`,
          );
    } finally {
      // Whatever the command still prints (a yielded process) is no longer this call's.
      stream?.close();
    }
    // Masked and redacted before the cut, but only the part the cut keeps: a flood of output costs
    // the loop what the cap costs.
    const mask = await hostPathMasker(context, sandbox);
    return rewriteThenTruncateMiddle(
      result,
      (text) => (text === '' ? text : redactSecrets(mask(text), env)),
      config.bashOutputMaxChars,
      rewriteReach(Object.values(env)),
    );
  });
}
