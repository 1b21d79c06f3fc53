/**
 * The program of the gateway watchdog (`GatewayWatchdog`), run as `node -e <this> <marker> <pid>`:
 * plain CommonJS with no imports of ours, so it runs from the published bundle and from the
 * TypeScript sources alike.
 *
 * It reads lines from its standard input, a pipe whose only writer is the gateway: `+ <sid>
 * <start>` (a command's session and its leader's start time), `- <sid>` (forget it), `stop`
 * (the gateway reaped everything itself; end without a sweep). When the pipe ends, the gateway is
 * gone, however it ended (SIGKILL included: the kernel closes the pipe), or it was stopped. Then,
 * unless told `stop`, it kills every live process in a session it was told about (whose leader is
 * gone or is still the process that was started: a session id is a pid the kernel may reuse) or
 * carrying `<marker>` (`SBX_PROVIDER_PROCESS_TAG=<tag>`) in its environment, in rounds until a
 * round finds none, and exits. The same sweep runs on SIGTERM, SIGINT and SIGHUP, and when its
 * parent is no longer the gateway (a belt to the pipe's braces, should another process ever hold
 * the pipe's write end). Linux only (`/proc`).
 *
 * The reaper of a live gateway (`process-reaper.ts`) applies the same rule; the two are held to
 * the same cases by `local-process-cleanup.test.ts` and `local-gateway-death.test.ts`.
 */
export const GATEWAY_WATCHDOG_SCRIPT = String.raw`
'use strict';
const fs = require('fs');
const marker = Buffer.from(process.argv[1] + '\0');
const gatewayPid = Number(process.argv[2]);
const sessions = new Map();
let stopped = false;
let finished = false;

function stat(pid) {
  let line;
  try {
    line = fs.readFileSync('/proc/' + pid + '/stat', 'latin1');
  } catch (error) {
    return undefined;
  }
  const close = line.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = line.slice(close + 2).split(' ');
  return { state: fields[0], sid: Number(fields[3]), start: fields[19] };
}

function marked(pid) {
  let environ;
  try {
    environ = fs.readFileSync('/proc/' + pid + '/environ');
  } catch (error) {
    return false;
  }
  return (
    environ.subarray(0, marker.length).equals(marker) ||
    environ.includes(Buffer.concat([Buffer.from([0]), marker]))
  );
}

function targets() {
  const found = [];
  const verdicts = new Map();
  const ours = (sid) => {
    if (!verdicts.has(sid)) {
      const leader = stat(sid);
      verdicts.set(sid, leader === undefined || leader.start === sessions.get(sid));
    }
    return verdicts.get(sid);
  };
  let entries;
  try {
    entries = fs.readdirSync('/proc');
  } catch (error) {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const s = stat(pid);
    if (s === undefined || s.state === 'Z' || s.state === 'X') continue;
    if ((sessions.has(s.sid) && ours(s.sid)) || marked(pid)) found.push(pid);
  }
  return found;
}

function sweep() {
  for (let round = 0; round < 5; round++) {
    const pids = targets();
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        // exited meanwhile
      }
    }
  }
}

function finish() {
  if (finished) return;
  finished = true;
  if (!stopped) sweep();
  process.exit(0);
}

let pending = '';
process.stdin.setEncoding('latin1');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
    const [op, sid, start] = pending.slice(0, end).split(' ');
    pending = pending.slice(end + 1);
    if (op === '+') sessions.set(Number(sid), start);
    else if (op === '-') sessions.delete(Number(sid));
    else if (op === 'stop') stopped = true;
  }
});
process.stdin.on('end', finish);
process.stdin.on('close', finish);
process.stdin.on('error', finish);
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, finish);
setInterval(() => {
  if (process.ppid !== gatewayPid) finish();
}, 1000);
`;
