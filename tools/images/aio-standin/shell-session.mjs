// One shell session of the AIO stand-in: a long-lived shell process running one command at a
// time, modelled on the image's terminal sessions (agent-infra/sandbox 1.9.3–1.11.0).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The image cuts shell output here unless the request says `truncate: false`. */
export const SHELL_OUTPUT_LIMIT = 30_000;

export function killGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Every descendant pid of `root`, read from /proc (children before their own children). */
async function descendants(root) {
  const parents = new Map();
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await fs.readFile(`/proc/${name}/stat`, 'utf8');
      // The command name may contain spaces and parentheses: fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(name), Number(fields[1]));
    } catch {
      // exited while scanning
    }
  }
  const found = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.shift();
    for (const [pid, ppid] of parents) {
      if (ppid === parent) {
        found.push(pid);
        frontier.push(pid);
      }
    }
  }
  return found;
}

/**
 * One long-lived shell process. A command is written to a file and sourced (so `cd` and `export`
 * persist, and no quoting of the command can break the framing), followed by a sentinel line with
 * a fresh random token on stdout and on stderr; the command is complete when both sentinels have
 * arrived. Output is stdout and stderr merged in arrival order (the image reads one terminal).
 *
 * As in the image, a timeout does not stop the command: the answer reports the output so far and
 * the session stays busy until the command ends or is killed (`kill()`).
 */
export class ShellSession {
  constructor(id, { shell, cwd, env }) {
    this.id = id;
    this.cwd = cwd;
    this.dead = false;
    this.corrupted = false;
    /** The command still running after its answer was sent (a timeout), if any. */
    this.running = undefined;
    this.lastUsedMs = Date.now();
    this.current = undefined;
    this.child = spawn(shell.file, shell.args, {
      cwd,
      env: { ...env, PS1: '', PS2: '', HOME: env.HOME ?? cwd },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.stdin.on('error', () => {});
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => this.current?.onData('out', chunk));
    this.child.stderr.on('data', (chunk) => this.current?.onData('err', chunk));
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        this.dead = true;
        resolve();
        this.current?.onExit(code ?? (signal ? 128 : 0));
      });
      this.child.once('error', () => {
        this.dead = true;
        resolve();
        this.current?.onExit(127);
      });
    });
    // Swallows the shell's banner and start-up warnings.
    this.ready = this.#start(null, {}).then((answer) => answer.done);
  }

  /** True while a command runs (answered or not): such a session is never evicted. */
  get busy() {
    return this.current !== undefined;
  }

  /**
   * Runs `command`; resolves with the answer: at completion, or at the first timeout with the
   * output so far (the command then keeps running).
   */
  async exec(command, timeouts) {
    await this.ready;
    this.lastUsedMs = Date.now();
    if (this.dead) return { status: 'terminated', output: '', exitCode: null };
    const answer = await this.#start(command, timeouts);
    return answer.first;
  }

  /** Kills what the session's current command started; the shell itself survives if it can. */
  async kill() {
    if (!this.current) return { status: 'idle', exitCode: null };
    const pending = this.running ?? Promise.resolve();
    for (const pid of await descendants(this.child.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const settled = await Promise.race([
      pending.then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 2_000)),
    ]);
    if (!settled) {
      // A loop of shell builtins has no child to kill: the shell goes, and the session with it.
      await this.close();
      return { status: 'killed', exitCode: 137 };
    }
    return { status: 'killed', exitCode: 137 };
  }

  #start(command, { noChangeTimeout, hardTimeout }) {
    const token = `__SBX_STANDIN_${randomUUID().replace(/-/g, '')}__`;
    const file = path.join(os.tmpdir(), `sbx-standin-${token}.sh`);
    let firstAnswer;
    const first = new Promise((resolve) => (firstAnswer = resolve));
    const done = new Promise((resolve) => {
      const buffers = { out: '', err: '' };
      const arrivals = [];
      const cuts = { out: -1, err: -1 };
      let exitCode = null;
      let answered = false;
      let idleTimer;
      let hardTimer;
      const assemble = () => {
        const taken = { out: 0, err: 0 };
        let output = '';
        for (const { stream, length } of arrivals) {
          const limit = cuts[stream] === -1 ? buffers[stream].length : cuts[stream];
          const from = taken[stream];
          const to = Math.min(from + length, limit);
          if (to > from) output += buffers[stream].slice(from, to);
          taken[stream] += length;
        }
        return output;
      };
      const answer = (status) => {
        if (answered) return;
        answered = true;
        clearTimeout(idleTimer);
        clearTimeout(hardTimer);
        firstAnswer({
          status,
          output: assemble(),
          exitCode: status === 'completed' ? exitCode : null,
        });
      };
      const complete = () => {
        clearTimeout(idleTimer);
        clearTimeout(hardTimer);
        this.current = undefined;
        this.running = undefined;
        this.lastUsedMs = Date.now();
        fs.rm(file, { force: true }).catch(() => {});
        answer('completed');
        resolve();
      };
      const armIdle = () => {
        if (!noChangeTimeout || answered) return;
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => {
          answer('no_change_timeout');
          this.running = done;
        }, noChangeTimeout * 1000);
      };
      this.current = {
        onData: (stream, chunk) => {
          buffers[stream] += chunk;
          arrivals.push({ stream, length: chunk.length });
          armIdle();
          if (cuts.out === -1) {
            const m = new RegExp(`${token}(\\d+)\\n`).exec(buffers.out);
            if (m) {
              cuts.out = m.index;
              exitCode = Number(m[1]);
            }
          }
          if (cuts.err === -1) {
            const at = buffers.err.indexOf(`${token}\n`);
            if (at !== -1) cuts.err = at;
          }
          if (cuts.out !== -1 && cuts.err !== -1) complete();
        },
        onExit: (code) => {
          // `exit` ends the shell: whatever it printed is the output, its status the exit code.
          exitCode = code;
          complete();
        },
      };
      armIdle();
      if (hardTimeout) {
        hardTimer = setTimeout(() => {
          answer('hard_timeout');
          this.running = done;
        }, hardTimeout * 1000);
      }
      const sentinel = `__sbx_standin_rc=$?; printf '%s%s\\n' '${token}' "$__sbx_standin_rc"; printf '%s\\n' '${token}' >&2\n`;
      if (command === null) {
        this.child.stdin.write(sentinel);
      } else {
        fs.writeFile(file, `${command}\n`).then(
          () => this.child.stdin.write(`. '${file}' </dev/null\n${sentinel}`),
          () => this.child.stdin.write(`false\n${sentinel}`),
        );
      }
    });
    return Promise.resolve({ first, done });
  }

  async close() {
    this.dead = true;
    killGroup(this.child);
    await this.exited;
  }
}
