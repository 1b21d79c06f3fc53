import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import {
  errorMessage,
  getToolDefinitions,
  runToolCall,
  silentLogger,
  type Logger,
  type SandboxConfig,
  type SandboxProvider,
  type ToolCallResult,
  type ToolContext,
  type ToolDefinition,
  type ToolName,
  type ToolOutputListener,
} from '@sbx/core';
import { DEFAULT_USER_ID, TOOL_NAMES, isToolName } from '@sbx/core/internal';
import { ALL_TOOL_NAMES } from '@sbx/core';
import {
  buildPrincipal,
  createSandboxAuthorizer,
  filterToolsForPrincipal,
  type AuthorizationConfigSource,
} from '@sbx/authz';
import { isConfinedProvider, isHostDirectoryProvider } from './host-directory-provider.js';
import { toolContextFor } from './provider-session.js';
import { CLI_VERSION } from './version.js';

export interface SbxMcpServerOptions {
  provider: SandboxProvider;
  /** The loaded configuration (tool limits, host bash, mounts). */
  config: SandboxConfig;
  /** Default `default`. */
  userId?: string | undefined;
  /** The session's thread, hence its sandbox. Default: a fresh random id per server. */
  threadId?: string | undefined;
  /**
   * Overrides `sandbox.allow_host_bash` for what the tool layer allows and offers. A host provider
   * checks its own setting as well, so build it with host bash enabled too.
   */
  allowHostBash?: boolean | undefined;
  /**
   * The authorization config (`authorization:` section, as @sbx/authz reads it). A function is
   * called on every decision, so edits apply to the next call. Absent: no authorization.
   */
  authorization?: AuthorizationConfigSource | undefined;
  /** The caller's role; without one the config's `default_role` applies. */
  role?: string | undefined;
  /**
   * Overrides `sandbox.tools.process_tools`: bash's yield mode (`yield_time_ms`) and the four
   * process tools.
   */
  processTools?: boolean | undefined;
  logger?: Logger | undefined;
}

/** One MCP session: a server bound to one thread's sandbox. */
export interface SbxMcpSession {
  readonly server: Server;
  readonly userId: string;
  readonly threadId: string;
  /** The tool context every call of this session shares (sandbox id, read-before-write marks). */
  readonly context: ToolContext;
  /** The tools this session's principal is offered, in core's order. */
  offeredTools(): Promise<ToolDefinition[]>;
  /** Releases the session's sandbox and closes the server. The provider stays up (the caller owns it). */
  close(): Promise<void>;
}

const READ_ONLY_TOOLS: ReadonlySet<ToolName> = new Set(['ls', 'glob', 'grep', 'read_file']);

/**
 * The structured result of the tools that run a command (`ToolCallResult.command`, core's
 * `CommandDetails`): what a client reads instead of parsing the text.
 */
export const COMMAND_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    exitCode: {
      type: ['integer', 'null'],
      description: 'Exit status; null while running, when a signal or the time limit ended it',
    },
    running: { type: 'boolean', description: 'Still running as a background process' },
    timedOut: { type: 'boolean', description: 'Killed at its time limit' },
    signal: { type: 'string', description: 'The signal that ended it' },
    processId: {
      type: 'string',
      description: 'Id for process_output, process_write and process_kill',
    },
    stdout: { type: 'string', description: 'Standard output as shown (masked, redacted, bounded)' },
    stderr: { type: 'string', description: 'Standard error as shown (masked, redacted, bounded)' },
    truncated: { type: 'boolean', description: 'Some output was left out' },
  },
  required: ['exitCode', 'running', 'timedOut', 'stdout', 'stderr', 'truncated'],
  additionalProperties: false,
} as const;

/** The tools whose every successful result carries `ToolCallResult.command`. */
export const COMMAND_TOOLS: ReadonlySet<ToolName> = new Set([
  'bash',
  'process_output',
  'process_write',
  'process_kill',
]);

function toMcpTool(definition: ToolDefinition): Tool {
  const readOnly = READ_ONLY_TOOLS.has(definition.name);
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema as Tool['inputSchema'],
    ...(COMMAND_TOOLS.has(definition.name)
      ? { outputSchema: COMMAND_OUTPUT_SCHEMA as unknown as Tool['outputSchema'] }
      : {}),
    annotations: { readOnlyHint: readOnly, destructiveHint: !readOnly, openWorldHint: false },
  };
}

function mcpResult(result: ToolCallResult): CallToolResult {
  // The tool decides whether its result is a failure; the text alone cannot tell (a file may
  // start with "Error:"). The text stays what the model reads; the structured content is the
  // same outcome as data, also for a command that failed.
  return {
    content: [{ type: 'text', text: result.text }],
    isError: result.isError,
    ...(result.command ? { structuredContent: { ...result.command } } : {}),
  };
}

/**
 * The progress notifications of one call whose client asked for them (`_meta.progressToken`):
 * each piece of bash's streamed output (`ToolCallOptions.onOutput`: masked, redacted, bounded) as
 * the `message` of one notification, `progress` counting the characters sent so far. Sent in
 * order, all before the call's result.
 */
function progressListener(
  progressToken: string | number | undefined,
  send: (notification: ServerNotification) => Promise<void>,
  logger: Logger,
): ToolOutputListener | undefined {
  if (progressToken === undefined) return undefined;
  let progress = 0;
  let failed = false;
  return (chunk) => {
    progress += chunk.text.length;
    send({
      method: 'notifications/progress',
      params: { progressToken, progress, message: chunk.text },
    }).catch((err: unknown) => {
      // One line per call: a client that went away fails every later notification the same way.
      if (failed) return;
      failed = true;
      logger.warn('sending an MCP progress notification failed', { error: errorMessage(err) });
    });
  };
}

/**
 * An MCP server (official SDK, low-level `Server` because the input schemas are core's JSON
 * schemas as they are, not re-derived by the SDK) offering the agent tools over one provider: the
 * seven, plus the four process tools with `processTools`. The tools that run a command declare
 * `COMMAND_OUTPUT_SCHEMA` and return it as `structuredContent`; a `bash` call whose request
 * carries a `progressToken` streams its output as progress notifications.
 *
 * One session is one sandbox: all calls share the thread `threadId` (a fresh id unless given), and
 * one tool context, so the read-before-write marks of a `read_file` hold for a later `str_replace`.
 * With an authorization config, `tools/list` offers only what the role may call
 * (`filterToolsForPrincipal`), a call to anything else is refused without running, and every
 * sandbox touch passes the `sandbox:execute` gate (`createSandboxAuthorizer`). On the host provider
 * with host bash disabled, `bash` is not offered at all, since it could only refuse.
 */
export async function createSbxMcpServer(options: SbxMcpServerOptions): Promise<SbxMcpSession> {
  const { provider, config } = options;
  const logger = options.logger ?? silentLogger;
  const userId = options.userId ?? DEFAULT_USER_ID;
  const threadId = options.threadId ?? randomUUID();
  const authorization = options.authorization;
  const principal = buildPrincipal({ userId, userRole: options.role });
  const allowHostBash = options.allowHostBash ?? config.allowHostBash;
  const processTools = options.processTools ?? config.tools.processTools;

  const context = await toolContextFor(provider, config, {
    processTools,
    userId,
    threadId,
    logger,
    allowHostBash,
    authorize:
      authorization === undefined
        ? undefined
        : createSandboxAuthorizer<ToolContext>({ config: authorization, principal, logger }),
  });

  // `sandbox.tools.process_tools` (or `--process-tools`) adds bash's yield mode and the process
  // tools; without a shell (an unconfined host provider with host bash off) neither bash nor the
  // process tools are offered.
  const shellless =
    isHostDirectoryProvider(provider) && !allowHostBash && !isConfinedProvider(provider);
  const baseTools: readonly ToolName[] = (processTools ? ALL_TOOL_NAMES : TOOL_NAMES).filter(
    (name) => !(shellless && (name === 'bash' || name.startsWith('process_'))),
  );
  const offeredTools = async (): Promise<ToolDefinition[]> => {
    const all = getToolDefinitions({ tools: baseTools, processTools });
    if (authorization === undefined) return all;
    return filterToolsForPrincipal(principal, all, { config: authorization, logger });
  };

  const server = new Server(
    { name: 'sbx', version: CLI_VERSION },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        'Tools of one sbx sandbox. Files live under /mnt/user-data (workspace, uploads, outputs); ' +
        'bash commands start in /mnt/user-data/workspace. Existing files must be read with ' +
        'read_file before they are overwritten or edited.',
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: (await offeredTools()).map(toMcpTool),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const offered = await offeredTools();
    if (!offered.some((tool) => tool.name === name)) {
      const names = offered.map((tool) => tool.name).join(', ') || '(none)';
      return mcpResult({
        text: isToolName(name)
          ? `Error: Tool '${name}' is not available in this session. Available tools: ${names}`
          : `Error: Unknown tool '${name}'. Available tools: ${names}`,
        isError: true,
      });
    }
    // Same state and session as every other call; the cancellation and the progress are the
    // request's own.
    const onOutput = progressListener(
      request.params._meta?.progressToken,
      extra.sendNotification,
      logger,
    );
    const result = await runToolCall(name, args ?? {}, context, {
      signal: extra.signal,
      ...(onOutput ? { onOutput } : {}),
    });
    if (!result.isError && COMMAND_TOOLS.has(name as ToolName) && !result.command) {
      // A client validates the structured content a tool with an output schema must give.
      logger.error('a command tool succeeded without its structured result', { tool: name });
    }
    return mcpResult(result);
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const sandboxId = context.state.sandboxId;
      try {
        if (sandboxId !== undefined) await provider.release(sandboxId);
      } catch (err) {
        logger.error('releasing the MCP session sandbox failed', {
          sandboxId,
          error: errorMessage(err),
        });
      }
      await server.close();
    })();
    return closing;
  };

  return { server, userId, threadId, context, offeredTools, close };
}
