/**
 * Plain HTTP in absolute form (`GET http://host/path`): the one `Host` header must name the URI's
 * host and port, the request goes upstream in origin form with `Connection: close` (one request
 * per connection, so a kept-alive connection cannot carry a second request past the decision).
 * A brokering sandbox's request is read through (`http-request-relay.ts`): placeholders are
 * refused anywhere, and a credential is never swapped onto cleartext.
 */
import { connect, type Socket } from 'node:net';
import { parseAuthority } from './egress-admission.js';
import type { EgressContext, SandboxState } from './egress-context.js';
import { Refusal, endWithRefusal } from './egress-refusal.js';
import { inspectHead, relayRequest } from './http-request-relay.js';
import { headerValues, type RequestHead } from './request-head.js';
import { StreamReader } from './socket-reader.js';
import { pipeUpstream } from './upstream-pipe.js';

const HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
]);

export async function forwardPlainHttp(
  ctx: EgressContext,
  state: SandboxState,
  socket: Socket,
  head: RequestHead,
  rest: Buffer,
): Promise<void> {
  const refuse = (host: string, port: number, refusal: Refusal) => {
    ctx.decide(state, 'HTTP', host, port, 'deny', refusal.reason);
    if (refusal.reason.startsWith('placeholder-') || refusal.reason.startsWith('credential-')) {
      ctx.logger.warn('egress placeholder refused', {
        sandboxId: state.sandboxId,
        threadId: state.threadId,
        host,
        port,
        reason: refusal.reason,
      });
    }
    endWithRefusal(socket, refusal);
  };
  const url = /^http:\/\/([^/?#]+)([/?#].*)?$/i.exec(head.target);
  if (!url) {
    // https:// in absolute form would make the proxy the TLS client; origin-form has no host.
    return refuse('', 0, new Refusal(400, 'bad-request'));
  }
  const target = parseAuthority(url[1]!, 80);
  if (!target) return refuse('', 0, new Refusal(400, 'bad-request'));
  const { host, port } = target;
  const hosts = headerValues(head, 'host');
  const hostHeader = hosts.length === 1 ? parseAuthority(hosts[0]!, 80) : undefined;
  if (!hostHeader || hostHeader.host !== host || hostHeader.port !== port) {
    // The upstream routes on Host: a Host naming another site is fronting through this address.
    return refuse(host, port, new Refusal(400, 'host-mismatch'));
  }
  const broker = state.broker;
  const relay = broker ? { state, broker, method: 'HTTP' as const, host, port } : undefined;
  // Checked before the decision: a placeholder sent to a denied host is reported as what it is.
  const plan = relay ? inspectHead(relay, head, HOP_HEADERS) : undefined;
  if (plan instanceof Refusal) return refuse(host, port, plan);
  const admitted = await ctx.admit(state, host, port);
  if (admitted instanceof Refusal) return refuse(host, port, admitted);
  const path = url[2] === undefined ? '/' : url[2].startsWith('/') ? url[2] : `/${url[2]}`;
  const requestLine = `${head.method} ${path} ${head.version}`;
  if (!relay || !plan) {
    const headers = head.headers.filter(([name]) => !HOP_HEADERS.has(name));
    const outgoing = Buffer.from(
      `${requestLine}\r\n` +
        headers.map(([n, v]) => `${n}: ${v}\r\n`).join('') +
        'connection: close\r\n\r\n',
      'latin1',
    );
    return pipeUpstream(
      ctx,
      state,
      socket,
      'HTTP',
      host,
      port,
      admitted,
      Buffer.concat([outgoing, rest]),
    );
  }
  const upstream: Socket = connect({ host: admitted.address, port, noDelay: true });
  const failed = await new Promise<Error | undefined>((resolve) => {
    upstream.once('connect', () => resolve(undefined));
    upstream.once('error', resolve);
  });
  upstream.on('error', (error) =>
    ctx.logger.debug('egress upstream error', { sandboxId: state.sandboxId, host, error }),
  );
  if (failed) return refuse(host, port, new Refusal(502, 'upstream-failed'));
  const idle = ctx.limits.idleTimeoutMs;
  upstream.setTimeout(idle, () => upstream.destroy());
  socket.setTimeout(idle, () => socket.destroy());
  socket.once('close', () => upstream.destroy());
  upstream.once('close', () => socket.destroySoon());
  upstream.pipe(socket);
  const reader = new StreamReader(socket);
  reader.unshift(rest);
  const refused = await relayRequest(ctx, relay, reader, upstream, requestLine, plan, [
    ['connection', 'close'],
  ]);
  if (refused) {
    upstream.unpipe(socket);
    upstream.destroy();
    return refuse(host, port, refused);
  }
  ctx.decide(state, 'HTTP', host, port, 'allow', admitted.reason);
}
