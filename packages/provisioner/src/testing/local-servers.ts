// The local servers behind the stand-in's fake kubelet and node ports: what a started Pod runs (by
// default a minimal server answering the sandbox readiness path; a test passes the AIO stand-in),
// and a node port assigned at once, proxying to a selected running Pod and refusing until there
// is one, so `http://127.0.0.1:<nodePort>` behaves as a cluster's node port does.

import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Pod } from '../kube-objects.js';

/** A server on a 127.0.0.1 port. */
export interface PodServer {
  port: number;
  close(): Promise<void>;
}

export type PodServerFactory = (pod: Pod) => Promise<PodServer>;

export async function minimalPodServer(): Promise<PodServer> {
  const server = http.createServer((req, res) => {
    res.writeHead(req.url?.startsWith('/v1/sandbox') ? 200 : 404, {
      'content-type': 'application/json',
    });
    res.end(JSON.stringify({ success: true, data: { home_dir: '/root' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A node port: each connection is piped to the port `target` names at that moment, or refused
 * (destroyed) while it names none.
 */
export async function openNodePortProxy(target: () => number | undefined): Promise<PodServer> {
  const server = net.createServer((socket) => {
    const port = target();
    if (port === undefined) {
      socket.destroy();
      return;
    }
    const upstream = net.connect(port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end);
    upstream.on('error', end);
    socket.on('close', end);
    upstream.on('close', end);
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of sockets) c.destroy();
        server.close(() => resolve());
      }),
  };
}
