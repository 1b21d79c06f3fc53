// Helpers of this package's tests: run `sbx` in-process with a private environment and captured
// output, and fake provider packages for the module importer.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import type { ModuleImporter, SandboxProviderInit } from '@sbx/core';
import { MemorySandboxProvider, type MemorySandboxProviderOptions } from '@sbx/core/testing';
import { runCli } from './run-cli.js';

export interface CapturedRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

class Capture extends Writable {
  text = '';
  isTTY = false;
  constructor(private readonly onWrite?: (text: string) => void) {
    super();
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    this.onWrite?.(this.text);
    done();
  }
}

export interface SbxRunOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  importer?: ModuleImporter;
  signal?: AbortSignal;
  /** Default: an empty stream that never ends. */
  stdin?: NodeJS.ReadableStream & PassThrough;
  /** Called after every write to stdout with everything written so far. */
  onStdout?: (soFar: string) => void;
}

/**
 * Runs `sbx <args>` in this process. The environment is only what the test gives plus PATH, so a
 * developer's own variables (API keys, SBX_CONFIG, DOCKER_HOST) cannot change the outcome.
 */
export async function sbx(
  args: readonly string[],
  options: SbxRunOptions = {},
): Promise<CapturedRun> {
  const stdout = new Capture(options.onStdout);
  const stderr = new Capture();
  const code = await runCli(args, {
    io: {
      stdout,
      stderr,
      stdin: options.stdin ?? new PassThrough(),
      env: { PATH: process.env.PATH, ...options.env },
      cwd: options.cwd ?? process.cwd(),
    },
    ...(options.importer ? { importer: options.importer } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** A fresh directory, removed by the returned function. */
export async function tempDir(
  prefix: string,
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), `sbx-cli-${prefix}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * An importer that serves `modules` by specifier and imports everything else for real, so a test
 * can name a fake provider package in `--provider` and still load @sbx/local.
 */
export function importerWith(modules: Readonly<Record<string, unknown>>): ModuleImporter {
  return async (specifier) => (specifier in modules ? modules[specifier] : import(specifier));
}

/**
 * A provider class as a provider package exports it (constructed with `{ config, logger }`), backed
 * by an in-memory sandbox per thread. `instances` records what the loader built.
 */
export function memoryProviderClass(options: MemorySandboxProviderOptions = {}): {
  readonly Provider: new (init: SandboxProviderInit) => MemorySandboxProvider;
  readonly instances: MemorySandboxProvider[];
} {
  const instances: MemorySandboxProvider[] = [];
  class Provider extends MemorySandboxProvider {
    constructor(_init: SandboxProviderInit) {
      super(options);
      instances.push(this);
    }
  }
  return { Provider, instances };
}

/** A Docker Engine stand-in on a unix socket: `/version` and `/images/<name>/json`. */
export async function startFakeDocker(
  socketPath: string,
  images: readonly string[],
): Promise<{ requests: string[]; close: () => Promise<void> }> {
  const requests: string[] = [];
  const server = createHttpServer((req, res) => {
    const url = decodeURI(req.url ?? '');
    requests.push(url);
    if (url === '/version') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ Version: '27.0.1' }));
      return;
    }
    const image = /^\/images\/(.+)\/json$/.exec(url)?.[1];
    if (image !== undefined && images.includes(image)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ Id: 'sha256:0' }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: `No such image: ${image ?? url}` }));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A Redis stand-in on 127.0.0.1 that answers AUTH and PING (enough RESP for the doctor's probe).
 * With `password`, PING before a successful AUTH gets the NOAUTH error a real server sends.
 */
export async function startFakeRedis(
  options: { password?: string } = {},
): Promise<{ url: string; commands: string[][]; close: () => Promise<void> }> {
  const commands: string[][] = [];
  const server = net.createServer((socket) => {
    let buffer = '';
    let authed = options.password === undefined;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (;;) {
        const parsed = parseCommand(buffer);
        if (!parsed) return;
        buffer = buffer.slice(parsed.length);
        commands.push(parsed.args);
        const [name, ...rest] = parsed.args;
        if (name === 'AUTH') {
          authed = rest.at(-1) === options.password;
          socket.write(authed ? '+OK\r\n' : '-WRONGPASS invalid username-password pair\r\n');
        } else if (name === 'PING') {
          socket.write(authed ? '+PONG\r\n' : '-NOAUTH Authentication required.\r\n');
        } else socket.write(`-ERR unknown command '${name ?? ''}'\r\n`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    commands,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function parseCommand(text: string): { args: string[]; length: number } | undefined {
  const header = /^\*(\d+)\r\n/.exec(text);
  if (!header) return undefined;
  let offset = header[0].length;
  const args: string[] = [];
  for (let i = 0; i < Number(header[1]); i++) {
    const len = /^\$(\d+)\r\n/.exec(text.slice(offset));
    if (!len) return undefined;
    offset += len[0].length;
    const size = Number(len[1]);
    if (text.length < offset + size + 2) return undefined;
    args.push(text.slice(offset, offset + size));
    offset += size + 2;
  }
  return { args, length: offset };
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Lays out `node_modules/<name>/package.json` for each package, as an install would. */
export async function fakeInstall(
  projectDir: string,
  packages: Readonly<Record<string, string>>,
): Promise<void> {
  for (const [name, version] of Object.entries(packages)) {
    const dir = path.join(projectDir, 'node_modules', name);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name, version }));
  }
}
