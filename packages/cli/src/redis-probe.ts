import { connect as netConnect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { connect as tlsConnect } from 'node:tls';

export interface RedisPing {
  /** Round trip of one PING, in milliseconds. */
  readonly rttMs: number;
}

function encodeCommand(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/** Reads single-line RESP replies (`+OK`, `+PONG`, `-ERR ...`) off a socket, in order. */
class ReplyReader {
  private buffer = '';
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly lines: string[] = [];

  constructor(socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf('\r\n')) !== -1) {
        const line = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const next = this.waiting.shift();
        if (next) next(line);
        else this.lines.push(line);
      }
    });
  }

  next(): Promise<string> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}

async function expectReply(reader: ReplyReader, what: string, expected: string): Promise<void> {
  const line = await reader.next();
  if (line.startsWith('-')) throw new Error(`${what} failed: ${line.slice(1)}`);
  if (line !== `+${expected}`) throw new Error(`${what}: unexpected reply ${JSON.stringify(line)}`);
}

/**
 * Connects to `url` (`redis://` or `rediss://`, with optional user and password), authenticates
 * when the URL carries a password, and times one PING. Speaks the few bytes of RESP this needs
 * itself, so the check works without `ioredis` installed (that absence is a separate check).
 */
export async function pingRedis(url: string, signal: AbortSignal): Promise<RedisPing> {
  const parsed = new URL(url);
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`not a redis:// or rediss:// URL: ${parsed.protocol}`);
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const port = Number(parsed.port || 6379);
  const socket =
    parsed.protocol === 'rediss:'
      ? tlsConnect({ host, port, servername: host })
      : netConnect({ host, port });
  const reader = new ReplyReader(socket);
  const failure = new Promise<never>((_, reject) => {
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('connection closed')));
    const onAbort = (): void => reject(new Error('timed out'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  // Whichever of the two loses the race below may still reject later; that must not surface as an
  // unhandled rejection.
  failure.catch(() => {});
  try {
    const session = (async (): Promise<RedisPing> => {
      await new Promise<void>((resolve) =>
        socket.once(parsed.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => resolve()),
      );
      if (parsed.password) {
        const password = decodeURIComponent(parsed.password);
        const user = parsed.username ? decodeURIComponent(parsed.username) : undefined;
        socket.write(encodeCommand(user ? ['AUTH', user, password] : ['AUTH', password]));
        await expectReply(reader, 'AUTH', 'OK');
      }
      const started = performance.now();
      socket.write(encodeCommand(['PING']));
      await expectReply(reader, 'PING', 'PONG');
      return { rttMs: performance.now() - started };
    })();
    session.catch(() => {});
    return await Promise.race([session, failure]);
  } finally {
    socket.destroy();
  }
}

/** The URL without its password, for display. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparsable URL>';
  }
}
