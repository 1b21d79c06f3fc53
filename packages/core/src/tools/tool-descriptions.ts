import type { ToolName } from './tool-schemas.js';

/**
 * Model-facing descriptions of the sandbox tools. They carry operating guidance the model cannot
 * infer from the schemas: where files live, how to run long-lived processes, and how to probe the
 * host when the sandbox is the host itself.
 */
export const BASH_TOOL_DESCRIPTION = [
  'Run a shell command in the sandbox and return its combined output (stdout, then stderr after a "Std Error:" header, then a non-zero exit code).',
  'Commands start in /mnt/user-data/workspace. Work with files under /mnt/user-data/{workspace,uploads,outputs}; skills are under /mnt/skills (read-only). Put deliverables in /mnt/user-data/outputs.',
  'Python: use `python` and keep third-party packages in a virtual environment at /mnt/user-data/workspace/.venv (`python -m venv /mnt/user-data/workspace/.venv`, then `/mnt/user-data/workspace/.venv/bin/python -m pip install ...`).',
  'Long-lived processes (servers, watchers, dev builds) must be started in the background from the start, with output redirected, e.g. `your-server > /mnt/user-data/workspace/server.log 2>&1 &`. A foreground server blocks the call until the command timeout kills it, and the turn is wasted.',
  'Commands read no input: stdin is empty, so interactive prompts get end-of-file. Pass flags such as `-y` instead.',
  'Only when the sandbox runs directly on the host (a local sandbox): to learn the host environment, start with `uname -s`; on Darwin follow with `sw_vers`; read Linux host system files (e.g. /etc/os-release) only if the active policy allows those paths. Host paths outside the virtual directories are refused: do not repeat a refused path, answer environment questions with command-only probes, and otherwise use the allowed virtual paths.',
].join('\n\n');

export const LS_TOOL_DESCRIPTION =
  'List a directory as a tree, two levels deep: entries are absolute virtual paths and directories end with "/". Common noise (.git, node_modules, caches, build output) is skipped. Returns "(empty)" for an empty or missing directory.';

export const GLOB_TOOL_DESCRIPTION =
  'Find files (and optionally directories) below a directory by glob pattern. Returns a numbered list of absolute virtual paths, bounded by max_results; narrow the path or the pattern when results are truncated. Common noise (.git, node_modules, caches) is skipped.';

export const GREP_TOOL_DESCRIPTION =
  'Search file contents line by line with a regular expression (case-insensitive by default). `path` may be one file or a directory searched recursively; `glob` restricts which files are searched. Returns `path:line_number: line` entries, bounded by max_results. Binary and very large files are skipped.';

export const READ_FILE_TOOL_DESCRIPTION =
  'Read a text file. Give start_line and/or end_line (1-based, inclusive) to read a range of a large file. Long results are cut; read further ranges to see the rest. Reading a file is required before overwriting or editing it.';

export const WRITE_FILE_TOOL_DESCRIPTION =
  'Write text to a file, creating parent directories. Replaces the whole file unless append is true. To change an existing file, read it first (writes to a file you have not read in its current version are refused); prefer str_replace for small edits. One call may write a limited amount of text: write large files in parts with append=true.';

export const STR_REPLACE_TOOL_DESCRIPTION =
  'Replace text in a file. `old_str` must match the file exactly (including whitespace) and occur exactly once, unless replace_all is true; include surrounding lines to make it unique. Read the file first: edits to a file you have not read in its current version are refused.';

/** What bash's description adds when the yield mode and the process tools are offered. */
export const BASH_YIELD_DESCRIPTION =
  'With yield_time_ms, a command still running after that time returns its output so far and a process_id; it keeps running, and process_output, process_write and process_kill reach it (process_list lists them). Use it for servers, watchers and long builds instead of backgrounding by hand.';

export const PROCESS_OUTPUT_TOOL_DESCRIPTION =
  'Read what a process started by a yielded bash call printed since the last read, and whether it is still running (with its exit code once it ended). wait_ms waits for it to end first, up to that long.';

export const PROCESS_WRITE_TOOL_DESCRIPTION =
  'Send text to the standard input of a running process (from a yielded bash call), then return what it printed in answer. End the text with "\\n" to press Enter.';

export const PROCESS_KILL_TOOL_DESCRIPTION =
  'Stop a running process (from a yielded bash call) with a signal (default SIGTERM; use SIGKILL if it ignores it), and return its last output and how it ended.';

export const PROCESS_LIST_TOOL_DESCRIPTION =
  'List the processes started by yielded bash calls in this sandbox: id, status (running, or the exit code), age and command.';

export const TOOL_DESCRIPTIONS: Readonly<Record<ToolName, string>> = {
  process_output: PROCESS_OUTPUT_TOOL_DESCRIPTION,
  process_write: PROCESS_WRITE_TOOL_DESCRIPTION,
  process_kill: PROCESS_KILL_TOOL_DESCRIPTION,
  process_list: PROCESS_LIST_TOOL_DESCRIPTION,
  bash: BASH_TOOL_DESCRIPTION,
  ls: LS_TOOL_DESCRIPTION,
  glob: GLOB_TOOL_DESCRIPTION,
  grep: GREP_TOOL_DESCRIPTION,
  read_file: READ_FILE_TOOL_DESCRIPTION,
  write_file: WRITE_FILE_TOOL_DESCRIPTION,
  str_replace: STR_REPLACE_TOOL_DESCRIPTION,
};
