import { realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createToolContext, runTool, type ToolContext, type ToolName } from '@sbx/core';
import { LocalSandboxProvider, SBX_HOME_ENV } from './local-sandbox-provider.js';

/**
 * A scripted agent session on the local provider, with no services: what an agent loop does with
 * the sbx tools, step by step, printed as tool call and result. Run it with `npm run demo` (or
 * `node packages/local/dist/demo.js`, or the `sbx-local-demo` bin).
 */

export interface DemoOptions {
  /** Receives each output line. Default: `console.log`. */
  write?: (line: string) => void;
  /**
   * Data directory. Default: `SBX_HOME` when set (kept afterwards), else a fresh temporary
   * directory (removed afterwards).
   */
  baseDir?: string;
}

/** A secret of the host process: the sandbox environment policy must keep it out. */
export const DEMO_HOST_SECRET_NAME = 'DEMO_API_KEY';
const DEMO_HOST_SECRET_VALUE = 'sk-demo-host-0123456789abcdef';
/** A secret injected for one request: usable by commands, redacted from their output. */
export const DEMO_REQUEST_SECRET_NAME = 'REQUEST_TOKEN';
const DEMO_REQUEST_SECRET_VALUE = 'req-demo-token-9f8e7d6c5b4a';

const USER_ID = 'demo-user';
const THREAD_ID = 'demo-thread';
const WS = '/mnt/user-data/workspace';

interface Step {
  note: string;
  tool: ToolName;
  input: Record<string, unknown>;
}

const STEPS: readonly Step[] = [
  {
    note: 'Create a script in the workspace (a new file needs no prior read).',
    tool: 'write_file',
    input: {
      description: 'Write the greeting script',
      path: `${WS}/greet.sh`,
      content: [
        '#!/bin/sh',
        '# TODO: make the greeting configurable',
        'name="${1:-world}"',
        'echo "Hello, $name!"',
        '',
      ].join('\n'),
    },
  },
  {
    note: 'Run it. Commands start in the workspace; host paths never show up in output.',
    tool: 'bash',
    input: { description: 'Run the script', command: 'sh greet.sh sandbox && pwd' },
  },
  {
    note: 'Search the workspace contents.',
    tool: 'grep',
    input: { description: 'Find TODOs', pattern: 'todo', path: WS },
  },
  {
    note: 'Find files by pattern.',
    tool: 'glob',
    input: { description: 'Find shell scripts', pattern: '*.sh', path: WS },
  },
  {
    note: 'Edit the file the agent itself just wrote: allowed.',
    tool: 'str_replace',
    input: {
      description: 'Resolve the TODO',
      path: `${WS}/greet.sh`,
      old_str: '# TODO: make the greeting configurable',
      new_str: '# The name comes from the first argument.',
    },
  },
  {
    note: 'Something else changes the file (here: a command) ...',
    tool: 'bash',
    input: { command: `echo 'echo "Bye!"' >> ${WS}/greet.sh` },
  },
  {
    note: '... so an edit is refused until the agent reads the new version (read-before-write).',
    tool: 'str_replace',
    input: { path: `${WS}/greet.sh`, old_str: 'Bye!', new_str: 'Goodbye!' },
  },
  {
    note: 'Read it.',
    tool: 'read_file',
    input: { description: 'Read the script', path: `${WS}/greet.sh` },
  },
  {
    note: 'Now the edit goes through.',
    tool: 'str_replace',
    input: { path: `${WS}/greet.sh`, old_str: 'Bye!', new_str: 'Goodbye!' },
  },
  {
    note: 'List the workspace.',
    tool: 'ls',
    input: { description: 'List the workspace', path: WS },
  },
  {
    note: `The host process has ${DEMO_HOST_SECRET_NAME} set; the sandbox environment does not.`,
    tool: 'bash',
    input: {
      description: 'Look for the host secret',
      command: `env | grep ${DEMO_HOST_SECRET_NAME} || echo "${DEMO_HOST_SECRET_NAME} is not visible"`,
    },
  },
  {
    note: `The request injects ${DEMO_REQUEST_SECRET_NAME}: commands can use it, output shows it redacted.`,
    tool: 'bash',
    input: {
      description: 'Use the request secret',
      command: `echo "token=$${DEMO_REQUEST_SECRET_NAME}"; printf %s "$${DEMO_REQUEST_SECRET_NAME}" | wc -c`,
    },
  },
  {
    note: 'Paths outside the virtual directories are refused before anything runs.',
    tool: 'read_file',
    input: { path: '/etc/passwd' },
  },
];

/** The result, indented under its call; a final newline would only print an empty line. */
function indent(text: string): string[] {
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => `    ${line}`);
}

/** Runs the scripted session and reports every tool call through `write`. */
export async function runDemo(options: DemoOptions = {}): Promise<void> {
  const write = options.write ?? ((line: string) => console.log(line));
  const fromEnv = process.env[SBX_HOME_ENV];
  const ownDir = options.baseDir === undefined && !fromEnv;
  const baseDir =
    options.baseDir ?? fromEnv ?? (await mkdtemp(path.join(tmpdir(), 'sbx-local-demo-')));

  // The host secret exists before the provider does, as a platform credential would.
  const previousSecret = process.env[DEMO_HOST_SECRET_NAME];
  process.env[DEMO_HOST_SECRET_NAME] = DEMO_HOST_SECRET_VALUE;
  // Commands run confined (bubblewrap namespaces), without allowHostBash: nothing of the host
  // beyond the thread's directories is reachable. Where bubblewrap cannot work, bash is off and
  // the line below says why.
  const provider = new LocalSandboxProvider({ baseDir });
  try {
    const context: ToolContext = createToolContext({
      provider,
      userId: USER_ID,
      threadId: THREAD_ID,
      env: { [DEMO_REQUEST_SECRET_NAME]: DEMO_REQUEST_SECRET_VALUE },
    });

    write(`sbx local demo: user '${USER_ID}', thread '${THREAD_ID}'`);
    write(`data directory: ${baseDir}${ownDir ? ' (temporary)' : ''}`);
    const mode = provider.commandMode;
    write(
      mode.kind === 'confined'
        ? 'bash: confined (bubblewrap namespaces: the thread sees its own directories, no host, no network)'
        : `bash: ${mode.kind === 'off' ? `off here (${mode.reason})` : 'on the host'}`,
    );
    for (const [index, step] of STEPS.entries()) {
      write('');
      write(`# ${index + 1}. ${step.note}`);
      write(`> ${step.tool} ${JSON.stringify(step.input)}`);
      const result = await runTool(step.tool, step.input, context);
      for (const line of indent(result)) write(line);
    }
    write('');
    write(`sandbox: ${context.state.sandboxId ?? '(none)'}`);
  } finally {
    await provider.shutdown();
    if (previousSecret === undefined) delete process.env[DEMO_HOST_SECRET_NAME];
    else process.env[DEMO_HOST_SECRET_NAME] = previousSecret;
    if (ownDir) await rm(baseDir, { recursive: true, force: true });
  }
}

function invokedDirectly(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    // The bin link points at this file; compare canonical paths (startup only, sync is fine).
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  runDemo().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
