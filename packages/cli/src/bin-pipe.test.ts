import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { servicesRequired } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { tempDir } from './test-support.js';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const built = existsSync(BIN);
if (!built && servicesRequired()) {
  throw new Error(`${BIN} is missing: run npm run build before the tests`);
}
if (!built) console.warn(`[skip] sbx in a closed pipe: ${BIN} is not built (npm run build)`);

describe.runIf(built)('sbx writing into a pipe its reader closed early', () => {
  it('`sbx doctor | head -0` ends quietly: no EPIPE crash, no stack trace', async () => {
    const home = await tempDir('bin-pipe');
    const child = spawn(process.execPath, [BIN, 'doctor'], {
      env: { PATH: process.env.PATH ?? '', SBX_HOME: home.dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A reader that is gone before the first line: every write finds the pipe closed.
    child.stdout.destroy();
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (c, s) => resolve([c, s])),
    );
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(signal).toBeNull();
    expect(code).not.toBeNull();
    await home.remove();
  });
});
