// Builds every package without printing the build log (`npm run demo` shows the demo, not pages of
// tsup output): one line while it runs, one when it is done. On failure the whole log is printed,
// then the build's exit status is returned. Usage: node tools/scripts/quiet-build.mjs [-- command...]
// (the command defaults to the workspace build; tests pass another).
import { spawn } from 'node:child_process';
import { chmod, lstat, mkdir, readFile, readdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Links the bins of the workspace packages into node_modules/.bin where npm did not: on a fresh
 * clone `npm ci` runs before any `dist/` exists, so it links no `sbx`, and `npx sbx` would then
 * not find the command (or fetch an unrelated package of that name).
 */
async function linkWorkspaceBins() {
  const binDir = path.join(root, 'node_modules', '.bin');
  await mkdir(binDir, { recursive: true });
  for (const dir of await readdir(path.join(root, 'packages'))) {
    let manifest;
    try {
      manifest = JSON.parse(
        await readFile(path.join(root, 'packages', dir, 'package.json'), 'utf8'),
      );
    } catch {
      continue;
    }
    const bins =
      typeof manifest.bin === 'string'
        ? { [manifest.name.split('/').pop()]: manifest.bin }
        : (manifest.bin ?? {});
    for (const [name, target] of Object.entries(bins)) {
      const link = path.join(binDir, name);
      const exists = await lstat(link).then(
        () => true,
        () => false,
      );
      if (exists) continue;
      const resolved = path.join(root, 'node_modules', manifest.name, target);
      await chmod(resolved, 0o755);
      await symlink(path.relative(binDir, resolved), link);
    }
  }
}

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
    if (separator < 0) {
      linkWorkspaceBins().catch((err) => {
        process.stderr.write(`could not link the workspace bins: ${err.message}\n`);
        process.exitCode = 1;
      });
    }
    return;
  }
  process.stderr.write(Buffer.concat(log));
  process.stderr.write(`build failed (${signal ?? `exit ${code}`})\n`);
  process.exit(code ?? 1);
});
