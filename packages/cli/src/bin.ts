import { ExitCode } from './exit-codes.js';
import { runCli } from './run-cli.js';

// A reader that stops early (`sbx doctor | head -3`) closes the pipe: what is left to print has no
// one to read it. That is how pipes end, not a failure, so the process ends quietly with the status
// it has so far, as other command-line tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? ExitCode.OK);
    throw err;
  });
}

// The first SIGINT/SIGTERM asks the running command to stop (a command in the sandbox is killed,
// an MCP session closes and releases its sandbox); a second one exits at once.
const controller = new AbortController();
const onSignal = (): void => {
  if (controller.signal.aborted) process.exit(ExitCode.INTERRUPTED);
  controller.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

runCli(process.argv.slice(2), { signal: controller.signal }).then(
  (code) => {
    process.exitCode = code;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = ExitCode.UNAVAILABLE;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  },
);
