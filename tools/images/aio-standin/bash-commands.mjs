// Async commands of the image's bash API (`POST /v1/bash/exec` with `async_mode`, then
// `/v1/bash/output`, `/v1/bash/write`, `/v1/bash/kill`), one command at a time per bash session.
// Output is kept whole per command and read with byte offsets, as the image does; a read never
// ends inside a UTF-8 character, so a client decoding each answer loses nothing.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';

/** Length of the longest prefix of `buf` that does not end inside a UTF-8 character. */
function completeUtf8(buf) {
  let end = buf.length;
  let i = end - 1;
  let back = 0;
  while (i >= 0 && back < 4 && (buf[i] & 0xc0) === 0x80) {
    i -= 1;
    back += 1;
  }
  if (i < 0) return end;
  const lead = buf[i];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (end - i < need) end = i;
  return end;
}

/** A byte buffer that grows by doubling, so appending n bytes costs O(n) overall. */
class Growable {
  #buf = Buffer.alloc(0);
  length = 0;
  append(chunk) {
    if (this.length + chunk.length > this.#buf.length) {
      const next = Buffer.alloc(Math.max(this.#buf.length * 2, this.length + chunk.length, 4096));
      this.#buf.copy(next, 0, 0, this.length);
      this.#buf = next;
    }
    chunk.copy(this.#buf, this.length);
    this.length += chunk.length;
  }
  view() {
    return this.#buf.subarray(0, this.length);
  }
}

export class BashCommands {
  /** session id → its current (or last) command */
  #bySession = new Map();

  constructor({ shellPromise, homeDir, baseEnv }) {
    this.shellPromise = shellPromise;
    this.homeDir = homeDir;
    this.baseEnv = baseEnv;
  }

  /** Starts `command` in session `sessionId`; the caller answers at once with `status: running`. */
  async start(sessionId, { command, env, execDir, hardTimeout }) {
    const current = this.#bySession.get(sessionId);
    if (current && current.status === 'running') {
      throw new Error(`Session ${sessionId} has a running command`);
    }
    const shell = await this.shellPromise;
    const args = shell.shArg ? [shell.shArg, '-c', command] : ['-c', command];
    const child = spawn(shell.commandShell, args, {
      cwd: execDir || this.homeDir,
      env: { ...this.baseEnv, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdin.on('error', () => {});
    const record = {
      commandId: randomUUID(),
      command,
      child,
      stdout: new Growable(),
      stderr: new Growable(),
      status: 'running',
      exitCode: null,
      killed: false,
      waiters: new Set(),
    };
    const wake = () => {
      for (const w of record.waiters) w();
      record.waiters.clear();
    };
    child.stdout.on('data', (c) => {
      record.stdout.append(c);
      wake();
    });
    child.stderr.on('data', (c) => {
      record.stderr.append(c);
      wake();
    });
    let timer;
    if (hardTimeout > 0) {
      timer = setTimeout(() => {
        record.timedOut = true;
        this.#signal(record, 'SIGKILL');
      }, hardTimeout * 1000);
    }
    child.once('error', () => {
      record.status = 'killed';
      wake();
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (record.timedOut) record.status = 'timed_out';
      else if (record.killed) record.status = 'killed';
      else {
        record.status = 'completed';
        record.exitCode = code;
      }
      wake();
    });
    this.#bySession.set(sessionId, record);
    return record;
  }

  get(sessionId) {
    return this.#bySession.get(sessionId);
  }

  /** New output after the offsets; with `wait`, holds until there is some, the end, or the limit. */
  async output(sessionId, { offset = 0, stderrOffset = 0, wait = false, waitTimeout = 30 }) {
    const record = this.#bySession.get(sessionId);
    if (!record) return undefined;
    const fresh = () =>
      completeUtf8(record.stdout.view()) > offset ||
      completeUtf8(record.stderr.view()) > stderrOffset;
    if (wait && record.status === 'running' && !fresh()) {
      await new Promise((resolve) => {
        const timer = setTimeout(done, Math.max(0, Number(waitTimeout) || 0) * 1000);
        function done() {
          clearTimeout(timer);
          record.waiters.delete(done);
          resolve();
        }
        record.waiters.add(done);
      });
    }
    const out = record.stdout.view();
    const err = record.stderr.view();
    const outEnd = Math.max(offset, completeUtf8(out));
    const errEnd = Math.max(stderrOffset, completeUtf8(err));
    return {
      session_id: sessionId,
      stdout: out.subarray(offset, outEnd).toString('utf8'),
      stderr: err.subarray(stderrOffset, errEnd).toString('utf8'),
      offset: outEnd,
      stderr_offset: errEnd,
      command: {
        command_id: record.commandId,
        command: record.command,
        status: record.status,
        exit_code: record.exitCode,
      },
    };
  }

  write(sessionId, input) {
    const record = this.#bySession.get(sessionId);
    if (!record || record.status !== 'running') return false;
    record.child.stdin.write(input);
    return true;
  }

  kill(sessionId, signal) {
    const record = this.#bySession.get(sessionId);
    if (!record || record.status !== 'running') return false;
    record.killed = true;
    this.#signal(record, signal);
    return true;
  }

  /** A closed session's command is killed, as the image does. */
  close(sessionId) {
    const record = this.#bySession.get(sessionId);
    if (record && record.status === 'running') {
      record.killed = true;
      this.#signal(record, 'SIGKILL');
    }
    this.#bySession.delete(sessionId);
  }

  closeAll() {
    for (const id of [...this.#bySession.keys()]) this.close(id);
  }

  #signal(record, signal) {
    try {
      process.kill(-record.child.pid, signal);
    } catch {
      // already gone
    }
  }
}
