import { validateLocalBashCommandPaths } from '../host/bash-path-guard.js';
import { isSbxError } from '../errors/errors.js';
import { localPathMasker } from '../paths/path-masking.js';
import {
  isUserDataRoot,
  resolveAndValidateUserDataPath,
  validateLocalToolPath,
} from '../paths/path-validation.js';
import type { Sandbox } from '../contract/sandbox.js';
import { VIRTUAL_PATH_PREFIX } from '../paths/virtual-paths.js';
import { replaceVirtualPathsInCommand } from '../paths/virtual-paths-thread.js';
import type { LocalToolEnvironment, ToolContext } from './tool-context.js';
import { describeError } from '../errors/error-inspection.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

/**
 * A local sandbox runs on the host: its shell can reach any host path, so the tool layer adds its own
 * checks in front of it (file-tool path validation, a best-effort bash path guard) and masks host
 * paths in everything it returns. Remote sandboxes are isolated and skip all of this.
 */
export function isLocalSandboxId(sandboxId: string | undefined): boolean {
  return sandboxId === 'local' || (sandboxId?.startsWith('local:') ?? false);
}

export function isLocalSandbox(sandbox: Sandbox): boolean {
  return isLocalSandboxId(sandbox.id);
}

/**
 * A sandbox that can describe its own host-side layout. A host-backed provider may implement this
 * so hosts need not build `ToolContext.local` themselves.
 */
export interface LocalToolEnvironmentSource {
  readonly localToolEnvironment: LocalToolEnvironment | undefined;
}

/** The context's explicit environment wins; otherwise what the sandbox reports about itself. */
export function localToolEnvironment(
  context: ToolContext,
  sandbox: Sandbox | undefined,
): LocalToolEnvironment | undefined {
  if (context.local) return context.local;
  return (sandbox as Partial<LocalToolEnvironmentSource> | undefined)?.localToolEnvironment;
}

/**
 * Rewrites host paths in text returned by a local sandbox to their virtual form. Without a sandbox
 * (a failure while acquiring it) the text is masked whenever the context describes a local thread.
 */
export async function maskHostPaths(
  context: ToolContext,
  sandbox: Sandbox | undefined,
  text: string,
): Promise<string> {
  if (text.length === 0) return text;
  return (await hostPathMasker(context, sandbox))(text);
}

/**
 * `maskHostPaths` prepared once, masking synchronously: for output that arrives in pieces while a
 * command runs, each piece masked as it comes, exactly as the whole result is.
 */
export async function hostPathMasker(
  context: ToolContext,
  sandbox: Sandbox | undefined,
): Promise<(text: string) => string> {
  if (sandbox ? !isLocalSandbox(sandbox) : !context.local) return (text) => text;
  const local = localToolEnvironment(context, sandbox);
  return localPathMasker({
    threadData: local?.threadData ?? null,
    ...(local?.skillsContainerPath ? { skillsContainerPath: local.skillsContainerPath } : {}),
    ...(local?.skillsHostPath ? { skillsHostPath: local.skillsHostPath } : {}),
    ...(local?.integrationsHostPath ? { integrationsHostPath: local.integrationsHostPath } : {}),
    ...(local?.userCustomSkillsHostPath
      ? { userCustomSkillsHostPath: local.userCustomSkillsHostPath }
      : {}),
  });
}

/**
 * Confines a file tool's path on a local sandbox: `/mnt/user-data/...` (inside the thread's
 * workspace, uploads or outputs, symbolic links followed), the skills tree and the ACP workspace
 * for reading, configured mounts per their read-only flag. The path stays virtual: the sandbox's
 * own mount table resolves it. Throws the validator's typed error.
 */
export async function guardFileToolPath(
  context: ToolContext,
  sandbox: Sandbox,
  path: string,
  access: 'read' | 'write',
): Promise<void> {
  if (!isLocalSandbox(sandbox)) return;
  const local = localToolEnvironment(context, sandbox);
  const threadData = local?.threadData;
  validateLocalToolPath(path, threadData, {
    readOnly: access === 'read',
    ...(local?.skillsContainerPath ? { skillsContainerPath: local.skillsContainerPath } : {}),
    ...(local?.customMounts ? { customMounts: local.customMounts } : {}),
  });
  // The root itself maps to no data directory; the sandbox lists and walks it through its mounts.
  if (threadData && path.startsWith(`${VIRTUAL_PATH_PREFIX}/`) && !isUserDataRoot(path)) {
    await resolveAndValidateUserDataPath(path, threadData);
  }
}

/**
 * Runs the file-tool path check and returns its refusal as a tool result (`Error: <reason>`), so the
 * model sees why the path is not allowed and which paths are, rather than a generic denial.
 */
export async function fileToolPathRefusal(
  context: ToolContext,
  sandbox: Sandbox,
  path: string,
  access: 'read' | 'write',
): Promise<string | undefined> {
  try {
    await guardFileToolPath(context, sandbox, path, access);
    return undefined;
  } catch (err) {
    // The validator's sentence already names the path and the allowed roots; the rendered
    // details would only repeat the path.
    if (isSbxError(err))
      return toolFailure(ToolErrorCode.PATH_NOT_ALLOWED, `Error: ${err.baseMessage}`);
    return toolFailure(
      ToolErrorCode.UNEXPECTED,
      `Error: Unexpected error validating path: ${describeError(err)}`,
    );
  }
}

/**
 * Screens a host bash command (best effort, not a boundary: see `validateLocalBashCommandPaths`)
 * and rewrites its `/mnt/user-data` paths to the thread's host directories. Returns the command to
 * run; remote sandboxes get it unchanged.
 */
export function prepareLocalBashCommand(
  context: ToolContext,
  sandbox: Sandbox,
  command: string,
): string {
  if (!isLocalSandbox(sandbox)) return command;
  const local = localToolEnvironment(context, sandbox);
  validateLocalBashCommandPaths(command, local?.threadData, {
    ...(local?.skillsContainerPath ? { skillsContainerPath: local.skillsContainerPath } : {}),
    ...(local?.customMounts ? { customMounts: local.customMounts } : {}),
    ...(local?.mcpAllowedPaths ? { mcpAllowedPaths: local.mcpAllowedPaths } : {}),
  });
  return replaceVirtualPathsInCommand(command, local?.threadData);
}
