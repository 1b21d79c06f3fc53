import { HostBashDisabledError, isSbxError } from '../errors/errors.js';
import type { ExecuteCommandOptions, Sandbox } from '../contract/sandbox.js';
import { VIRTUAL_WORKSPACE_PATH } from '../paths/virtual-paths.js';
import { redactSecrets } from '../config/env-policy.js';
import { LOCAL_HOST_BASH_DISABLED_MESSAGE } from '../host/host-bash.js';
import {
  isLocalSandbox,
  localToolEnvironment,
  maskHostPaths,
  prepareLocalBashCommand,
} from './local-sandbox-guard.js';
import { resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { describeError } from './tool-errors.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type BashInput } from './tool-schemas.js';
import { truncateBashOutput } from './truncation.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Every command starts in the workspace. A local sandbox gets the workspace's host directory (quoted,
 * it may contain spaces) and `&&`, so a failing `cd` stops the command instead of running it in the
 * host's current directory; a remote sandbox addresses the workspace by its virtual path.
 */
export function withWorkspaceCwd(context: ToolContext, sandbox: Sandbox, command: string): string {
  if (!isLocalSandbox(sandbox)) return `cd ${VIRTUAL_WORKSPACE_PATH}; ${command}`;
  const workspace = localToolEnvironment(context, sandbox)?.threadData?.workspacePath;
  return workspace ? `cd ${shellQuote(workspace)} && ${command}` : command;
}

async function requestEnv(context: ToolContext): Promise<Readonly<Record<string, string>>> {
  const source = context.env;
  if (!source) return {};
  return typeof source === 'function' ? await source() : source;
}

/**
 * `bash`: runs a shell command in the thread's sandbox. On a local sandbox host bash must be enabled
 * and the command passes the best-effort path guard first; output has host paths masked, request
 * secrets redacted, and is middle-truncated to `bashOutputMaxChars`.
 */
export function bashTool(context: ToolContext, input: BashInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('bash', input);
    if (!parsed.ok) return parsed.error;
    const { command } = parsed.value;
    const config = resolveToolConfig(context.config);
    const acquired = await sandboxForTool(context);
    if (!acquired.ok) return acquired.error;
    const sandbox = acquired.sandbox;
    let env: Readonly<Record<string, string>> = {};
    let result: string;
    try {
      const local = isLocalSandbox(sandbox);
      // One switch: unless the tool configuration says otherwise, a local sandbox built with host
      // bash on (`sandbox.allow_host_bash`) runs commands; an explicit `allowHostBash: false` here
      // still refuses them.
      const explicit = (context.config as { allowHostBash?: boolean } | undefined)?.allowHostBash;
      const sandboxAllows = (sandbox as { allowHostBash?: unknown }).allowHostBash === true;
      if (local && !(explicit ?? (config.allowHostBash || sandboxAllows))) {
        return toolFailure(
          HostBashDisabledError.CODE,
          `Error: ${LOCAL_HOST_BASH_DISABLED_MESSAGE}`,
        );
      }
      env = await requestEnv(context);
      const prepared = prepareLocalBashCommand(context, sandbox, command);

      const options: ExecuteCommandOptions = {};
      if (Object.keys(env).length > 0) options.env = env;
      if (local) options.timeoutMs = config.bashCommandTimeoutSeconds * 1000;
      if (context.signal) options.signal = context.signal;
      const full = withWorkspaceCwd(context, sandbox, prepared);
      result = context.commandScopeId
        ? await sandbox.executeCommandInScope(full, { ...options, scopeId: context.commandScopeId })
        : await sandbox.executeCommand(full, options);
    } catch (err) {
      result = isSbxError(err)
        ? toolFailure(err.code, `Error: ${err.message}`)
        : toolFailure(
            ToolErrorCode.UNEXPECTED,
            `Error: Unexpected error executing command: ${describeError(err)}`,
          );
    }
    const masked = await maskHostPaths(context, sandbox, result);
    return truncateBashOutput(redactSecrets(masked, env), config.bashOutputMaxChars);
  });
}
