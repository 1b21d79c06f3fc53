import { Command, InvalidArgumentError as CommanderArgumentError } from 'commander';
import type { CommandRuntime } from './command-runtime.js';
import { configValidateCommand } from './config-validate-command.js';
import { demoCommand } from './demo-command.js';
import { doctorCommand } from './doctor-command.js';
import { execCommand, type ExecOptions } from './exec-command.js';
import { gcCommand, type GcOptions } from './gc-command.js';
import { lsCommand, type LsOptions } from './ls-command.js';
import { mcpCommand, type McpOptions } from './mcp-command.js';
import { pauseCommand, resumeCommand, type PauseOptions } from './pause-command.js';
import { provisionerCommand, type ProvisionerOptions } from './provisioner-command.js';
import { toolCommand, type ToolOptions } from './tool-command.js';
import {
  forkCommand,
  snapshotCreateCommand,
  snapshotExportCommand,
  snapshotImportCommand,
  type ForkOptions,
  type SnapshotExportOptions,
  type SnapshotImportOptions,
} from './snapshot-command.js';
import { CLI_VERSION } from './version.js';
import type { CommonOptions } from './command-result.js';
import {
  DEFAULT_CLI_THREAD_ID,
  type ProviderCommandOptions,
  type ThreadCommandOptions,
} from './command-runtime.js';

export const EXIT_STATUS_HELP = `
Exit status:
  0    done; every required check passed
  1    the command found a problem: invalid config, failed required check, tool error
  2    bad command line (unknown command or option, malformed arguments)
  3    sbx could not do the work (provider not loadable, sandbox unavailable)
  130  interrupted
  exec exits with the command's own status; 124 when it timed out, 125 when sbx failed.

Environment:
  SBX_CONFIG   config file when --config is not given (SBX_CONFIG_PATH is read as well)
  SBX_HOME     data directory of the local provider (default ./.sbx)`;

function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) {
    throw new CommanderArgumentError('expected a positive number of seconds');
  }
  return n;
}

function tcpPort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new CommanderArgumentError('expected a TCP port (0-65535)');
  }
  return n;
}

function withJson(command: Command): Command {
  return command.option('--json', 'print one JSON document on stdout instead of text');
}

function withProvider(command: Command): Command {
  return withJson(command)
    .option('-c, --config <file>', 'sbx config file (default: $SBX_CONFIG)')
    .option(
      '-p, --provider <specifier>',
      'provider package, replaces sandbox.use (e.g. @sbx/local)',
    )
    .option('-v, --verbose', 'log debug and info messages of the provider to stderr');
}

function withThread(command: Command, threadDefault = DEFAULT_CLI_THREAD_ID): Command {
  return withProvider(command)
    .option('-u, --user <id>', 'user id of the sandbox (default: default)')
    .option('-t, --thread <id>', `thread id of the sandbox (default: ${threadDefault})`);
}

/**
 * The `sbx` command tree. Each action stores its exit status in `exit.code`; commander's own exits
 * (help, version, usage errors) are turned into exceptions by `exitOverride` and mapped by `runCli`.
 */
export function buildProgram(runtime: CommandRuntime, exit: { code: number }): Command {
  const { io } = runtime;
  const program = new Command('sbx')
    .description('Run commands and agent tools in sbx sandboxes, check the setup, serve MCP.')
    .version(CLI_VERSION, '-V, --version')
    .enablePositionalOptions()
    .exitOverride()
    .showHelpAfterError('(run sbx --help for usage)')
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .addHelpText('after', EXIT_STATUS_HELP);

  withJson(program.command('demo'))
    .description('run the scripted agent session on the local provider (as npm run demo)')
    .action(async (options: CommonOptions) => {
      exit.code = await demoCommand(options, runtime);
    });

  withThread(program.command('exec'))
    .description("run a command in the thread's sandbox; exits with the command's status")
    .argument('<command...>', 'one word: a shell command line; several: an argument vector')
    .option('--timeout <seconds>', 'time limit of the command', positiveSeconds)
    .passThroughOptions()
    .addHelpText('after', '\nExample:\n  sbx exec --thread t1 -- ls -la /mnt/user-data/workspace')
    .action(async (words: string[], options: ExecOptions) => {
      exit.code = await execCommand(words, options, runtime);
    });

  withThread(program.command('tool'))
    .description('call one agent tool (bash, ls, glob, grep, read_file, write_file, str_replace)')
    .argument('<name>', 'tool name')
    .argument('[json]', 'the arguments as a JSON object', '{}')
    .option('--allow-host-bash', 'let bash run on the local provider for this call')
    .addHelpText(
      'after',
      [
        '',
        'Calls of one user and thread share one tool session (what read_file read, for',
        'read-before-write), kept in the data directory under cli/tool-sessions.',
        '',
        'Example:',
        `  sbx tool read_file '{"path": "/mnt/user-data/workspace/a.txt"}'`,
        `  sbx tool str_replace '{"path": "/mnt/user-data/workspace/a.txt", "old_str": "hi", "new_str": "ho"}'`,
      ].join('\n'),
    )
    .action(async (name: string, json: string, options: ToolOptions) => {
      exit.code = await toolCommand(name, json, options, runtime);
    });

  withProvider(program.command('ls'))
    .alias('ps')
    .description('list the sandboxes the provider knows')
    .option(
      '-l, --label <key=value>',
      'only sandboxes whose spec labels include this one (repeatable)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action(async (options: LsOptions) => {
      exit.code = await lsCommand(options, runtime);
    });

  const snapshot = program
    .command('snapshot')
    .description("snapshots of a thread's data: create, export to and import from an archive");
  withThread(snapshot.command('create'))
    .description("the provider's snapshot of the thread (local: an archive in the data directory)")
    .action(async (options: ThreadCommandOptions) => {
      exit.code = await snapshotCreateCommand(options, runtime);
    });
  withThread(snapshot.command('export'))
    .description("write the thread's workspace, uploads and outputs as a checkpoint archive")
    .requiredOption('-o, --output <file>', 'archive to write (.tar.gz); must not exist')
    .action(async (options: SnapshotExportOptions) => {
      exit.code = await snapshotExportCommand(options, runtime);
    });
  withThread(snapshot.command('import'))
    .description('restore a checkpoint archive as the data of a thread that has none yet')
    .requiredOption('-i, --input <file>', 'archive to read (untrusted: checked entry by entry)')
    .action(async (options: SnapshotImportOptions) => {
      exit.code = await snapshotImportCommand(options, runtime);
    });
  withThread(program.command('fork'))
    .description('start thread --thread from a snapshot of thread --from')
    .requiredOption('--from <thread>', 'the thread to fork')
    .action(async (options: ForkOptions) => {
      exit.code = await forkCommand(options, runtime);
    });

  withThread(program.command('pause'))
    .argument('[thread]', 'thread whose sandbox to pause (default: --thread)')
    .description("suspend a thread's sandbox with its processes (providers with pause)")
    .action(async (thread: string | undefined, options: PauseOptions) => {
      exit.code = await pauseCommand(thread, options, runtime);
    });
  withThread(program.command('resume'))
    .argument('[thread]', 'thread whose sandbox to resume (default: --thread)')
    .description("continue a thread's paused sandbox")
    .action(async (thread: string | undefined, options: PauseOptions) => {
      exit.code = await resumeCommand(thread, options, runtime);
    });

  withProvider(program.command('gc'))
    .description("reap orphaned sandboxes under the provider's ownership rules")
    .option('--dry-run', 'show what would be reaped')
    .action(async (options: GcOptions) => {
      exit.code = await gcCommand(options, runtime);
    });

  const config = program.command('config').description('work with sbx config files');
  withJson(config.command('validate'))
    .description('validate a config file; lists every issue with its key path')
    .argument('<file>', 'config file (YAML)')
    .action(async (file: string, options: CommonOptions) => {
      exit.code = await configValidateCommand(file, options, runtime);
    });

  withProvider(program.command('doctor'))
    .description('check the prerequisites of the installed providers and stores')
    .action(async (options: ProviderCommandOptions) => {
      exit.code = await doctorCommand(options, runtime);
    });

  withThread(program.command('mcp'), 'a fresh id per session')
    .description('serve the agent tools over MCP (stdio), one sandbox per session')
    .option('--role <role>', 'role of the MCP client for authorization')
    .option('--authz-config <file>', 'YAML file with an authorization: section')
    .option('--allow-host-bash', 'offer bash on the local provider')
    .option(
      '--process-tools',
      "offer bash's yield_time_ms and the process tools (default: sandbox.tools.process_tools)",
    )
    .addHelpText(
      'after',
      [
        '',
        'MCP host configuration (names the package, so npx never runs an unrelated "sbx"):',
        '  { "command": "npx", "args": ["-y", "-p", "@sbx/cli", "sbx", "mcp"] }',
        'or, with @sbx/cli installed globally: { "command": "sbx", "args": ["mcp"] }',
      ].join('\n'),
    )
    .action(async (options: McpOptions) => {
      exit.code = await mcpCommand(options, runtime);
    });

  withJson(program.command('provisioner'))
    .description('serve the Kubernetes provisioner (needs @sbx/provisioner) until interrupted')
    .option('-c, --config <file>', 'sbx config file with a sandbox.provisioner block')
    .option('--host <address>', 'listen address (default: $PROVISIONER_HOST or 127.0.0.1)')
    .option('--port <port>', 'listen port (default: $PROVISIONER_PORT or 8002)', tcpPort)
    .option('-v, --verbose', 'log every request to stderr')
    .addHelpText(
      'after',
      '\nSettings: the environment variables of the @sbx/provisioner README (K8S_NAMESPACE,\nSANDBOX_IMAGE, PROVISIONER_API_KEY, ...), over the config file block.',
    )
    .action(async (options: ProvisionerOptions) => {
      exit.code = await provisionerCommand(options, runtime);
    });

  return program;
}
