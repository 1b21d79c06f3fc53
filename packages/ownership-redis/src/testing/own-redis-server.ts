import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';

/** A free TCP port on 127.0.0.1, as the kernel hands it out. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A private, throw-away `redis-server` (no persistence) that destructive tests may stop, restart,
 * pause and flush. Only ever signals the process it spawned itself.
 */
export class OwnRedisServer {
  readonly port: number;
  private child: ChildProcess | undefined;
  private paused = false;

  private constructor(port: number) {
    this.port = port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(port?: number): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(port ?? (await freePort()));
    await server.spawn();
    return server;
  }

  private spawn(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--bind',
        '127.0.0.1',
        '--port',
        String(this.port),
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    return new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const poll = () => {
        if (child.exitCode !== null) {
          reject(new Error(`redis-server exited (${child.exitCode}): ${output}`));
          return;
        }
        const socket = net.connect({ host: '127.0.0.1', port: this.port });
        socket.once('connect', () => {
          socket.write('PING\r\n');
        });
        socket.once('data', (d) => {
          socket.destroy();
          if (d.toString().startsWith('+PONG')) resolve();
          else setTimeout(poll, 20);
        });
        socket.once('error', () => {
          socket.destroy();
          if (Date.now() - started > 10_000)
            reject(new Error(`redis-server did not start: ${output}`));
          else setTimeout(poll, 20);
        });
      };
      poll();
    });
  }

  /** SIGSTOP: the port stays open and the kernel still accepts connections, nothing answers. */
  pause(): void {
    if (!this.child?.pid || this.paused) return;
    process.kill(this.child.pid, 'SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    if (!this.child?.pid || !this.paused) return;
    process.kill(this.child.pid, 'SIGCONT');
    this.paused = false;
  }

  /** Stops the server; its data is gone (no persistence). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.resume();
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
    this.child = undefined;
  }

  /** Stop, then start an empty server on the same port, as a restart without persistence does. */
  async restart(): Promise<void> {
    await this.stop();
    await this.spawn();
  }
}
