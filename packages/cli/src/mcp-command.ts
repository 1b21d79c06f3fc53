import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { SandboxProvider } from '@sbx/core';
import {
  parseAuthorizationConfig,
  parseAuthorizationConfigYaml,
  resolveAuthorizationProvider,
  type AuthorizationConfig,
  type AuthorizationConfigSource,
} from '@sbx/authz';
import { loadCliConfig } from './cli-config.js';
import { writeLine, type CliIo } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { describeFailure, exitCodeFor } from './command-result.js';
import type { CommandRuntime, ThreadCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { createSbxMcpServer } from './mcp-server.js';
import { closeProviderSession, openProvider } from './provider-session.js';

export interface McpOptions extends ThreadCommandOptions {
  /** YAML file with an `authorization:` section; re-read on every decision. */
  authzConfig?: string;
  role?: string;
  /** Offer `bash` on the host provider although `sandbox.allow_host_bash` is off. */
  allowHostBash?: boolean;
  /** Offer bash's yield mode and the process tools although `sandbox.tools.process_tools` is off. */
  processTools?: boolean;
}

async function readAuthorizationFile(file: string): Promise<AuthorizationConfig> {
  return parseAuthorizationConfigYaml(await readFile(file, 'utf8'));
}

/**
 * Where the session's authorization config comes from: `--authz-config` (re-read per decision, so
 * edits apply to the next call and a file that turns unreadable fails closed), else the
 * `authorization` block of the sbx config, else none. Either is checked once up front, its provider
 * included, so a broken setup stops the server before a client sees an empty tool list.
 */
async function authorizationSource(
  options: McpOptions,
  configBlock: Readonly<Record<string, unknown>> | undefined,
  io: CliIo,
): Promise<AuthorizationConfigSource> {
  let initial: AuthorizationConfig | undefined;
  let source: AuthorizationConfigSource = undefined;
  if (options.authzConfig !== undefined) {
    const file = path.resolve(io.cwd, options.authzConfig);
    initial = await readAuthorizationFile(file);
    source = () => readAuthorizationFile(file);
  } else if (configBlock !== undefined) {
    initial = parseAuthorizationConfig(configBlock);
    source = initial;
  }
  if (initial?.enabled === true) await resolveAuthorizationProvider(initial);
  return source;
}

/**
 * `sbx mcp`: serves the agent tools over MCP on stdin/stdout until the client disconnects (stdin
 * ends) or the process is interrupted. stdout carries the protocol only; everything else goes to
 * stderr.
 */
export async function mcpCommand(options: McpOptions, runtime: CommandRuntime): Promise<number> {
  const { io, signal, importer } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  let provider: SandboxProvider | undefined;
  try {
    const { config } = await loadCliConfig(options, io);
    const authorization = await authorizationSource(options, config.authorization, io);
    if (options.role !== undefined && authorization === undefined) {
      logger.warn('--role has no effect without an authorization config (--authz-config)');
    }
    provider = await openProvider(config, {
      logger,
      allowHostBash: options.allowHostBash === true ? true : undefined,
      importer,
    });
    const session = await createSbxMcpServer({
      provider,
      config,
      userId: options.user,
      threadId: options.thread,
      allowHostBash: options.allowHostBash === true ? true : undefined,
      authorization,
      role: options.role,
      processTools: options.processTools === true ? true : undefined,
      logger,
    });
    const closed = new Promise<void>((resolve) => {
      session.server.onclose = resolve;
    });
    const transport = new StdioServerTransport(io.stdin, io.stdout);
    // The transport closes itself on a fatal input error (a message over its 10 MiB buffer); that
    // must end the process with a failure and a reason, not like a client that hung up.
    let lastError: Error | undefined;
    session.server.onerror = (err: Error) => {
      lastError = err;
      logger.error('MCP transport error', { error: err.message });
    };
    await session.server.connect(transport);
    // The SDK's stdio transport does not notice the client going away; stdin ending is that signal.
    let stoppedByUs = false;
    const stop = (): void => {
      stoppedByUs = true;
      void transport.close();
    };
    io.stdin.once('end', stop);
    if (io.stdin.readableEnded) stop();
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });

    const tools = (await session.offeredTools()).map((t) => t.name);
    const banner = {
      provider: config.use,
      userId: session.userId,
      threadId: session.threadId,
      tools,
      authorization: authorization !== undefined,
    };
    if (options.json) writeLine(io.stderr, JSON.stringify({ event: 'listening', ...banner }));
    else {
      writeLine(
        io.stderr,
        `sbx mcp: serving ${tools.join(', ') || 'no tools'} over stdio (provider ${config.use}, user ${session.userId}, thread ${session.threadId})`,
      );
    }
    await closed;
    io.stdin.off('end', stop);
    signal?.removeEventListener('abort', stop);
    await session.close();
    if (!stoppedByUs) {
      const reason = lastError?.message ?? 'the transport closed';
      writeLine(
        io.stderr,
        options.json
          ? JSON.stringify({ ok: false, error: { code: 'MCP_TRANSPORT', message: reason } })
          : `sbx mcp: stopped: ${reason}`,
      );
      return ExitCode.FAILURE;
    }
    return ExitCode.OK;
  } catch (err) {
    // stdout belongs to the protocol even before it started: the failure goes to stderr only.
    const failure = describeFailure(err);
    writeLine(
      io.stderr,
      options.json ? JSON.stringify({ ok: false, error: failure }) : `sbx: ${failure.message}`,
    );
    return exitCodeFor(err);
  } finally {
    if (provider) await closeProviderSession(provider, undefined, logger);
  }
}
