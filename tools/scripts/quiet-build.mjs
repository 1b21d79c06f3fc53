// Builds every package without printing the build log (`npm run demo` shows the demo, not pages of
// tsup output): one line while it runs, one when it is done. On failure the whole log is printed,
// then the build's exit status is returned. Usage: node tools/scripts/quiet-build.mjs [-- command...]
// (the command defaults to the workspace build; tests pass another).
import { spawn } from 'node:child_process';

const separator = process.argv.indexOf('--');
const command =
  separator >= 0
    ? process.argv.slice(separator + 1)
    : ['npx', 'nx', 'run-many', '-t', 'build', '--output-style=stream'];

const started = Date.now();
process.stderr.write('building the packages (the log is shown only if the build fails)...\n');
const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
const log = [];
child.stdout.on('data', (chunk) => log.push(chunk));
child.stderr.on('data', (chunk) => log.push(chunk));
child.on('error', (err) => {
  process.stderr.write(`build could not start: ${err.message}\n`);
  process.exit(1);
});
child.on('close', (code, signal) => {
  if (code === 0) {
    process.stderr.write(`built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    return;
  }
  process.stderr.write(Buffer.concat(log));
  process.stderr.write(`build failed (${signal ?? `exit ${code}`})\n`);
  process.exit(code ?? 1);
});
