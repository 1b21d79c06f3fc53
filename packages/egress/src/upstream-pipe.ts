/**
 * The blind half of the proxy: once a request is decided and nothing in it needs reading, the
 * client and the checked upstream address are joined byte for byte. The allow event is emitted on
 * connect (not on decision), so an event stream shows what actually reached an upstream.
 */
import { connect, type Socket } from 'node:net';
import type { Admitted, EgressContext, SandboxState } from './egress-context.js';

export function pipeUpstream(
  ctx: EgressContext,
  state: SandboxState,
  client: Socket,
  method: 'CONNECT' | 'HTTP',
  host: string,
  port: number,
  admitted: Admitted,
  first: Buffer,
): void {
  // Not counted against the sandbox: each upstream lives and dies with its counted client.
  const upstream = connect({ host: admitted.address, port, noDelay: true });
  const idle = ctx.limits.idleTimeoutMs;
  upstream.setTimeout(idle, () => upstream.destroy());
  client.setTimeout(idle, () => client.destroy());
  let connected = false;
  upstream.once('connect', () => {
    connected = true;
    ctx.decide(state, method, host, port, 'allow', admitted.reason);
    upstream.write(first);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  });
  upstream.on('error', (error) => {
    if (!connected) {
      ctx.decide(state, method, host, port, 'deny', 'upstream-failed');
      if (method === 'HTTP') {
        client.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
    }
    ctx.logger.debug('egress upstream error', { sandboxId: state.sandboxId, host, error });
    client.destroy();
  });
  client.once('close', () => upstream.destroy());
  upstream.once('close', () => client.destroySoon());
}
