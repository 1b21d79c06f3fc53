import net from 'node:net';
import { SandboxRuntimeError } from '@sbx/core';

/** How many consecutive ports a search covers. */
export const PORT_SEARCH_SPAN = 100;

/** True when nothing listens on `host:port` right now (a listener could be opened). */
export function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: host.replace(/^\[(.*)\]$/, '$1'), exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/**
 * Hands out host ports for sandbox containers. A port stays reserved in this process until
 * released, so two concurrent creates never pick the same one even before Docker has bound it.
 */
export class PortAllocator {
  private readonly reserved = new Set<number>();

  constructor(
    private readonly bindHost: string,
    private readonly probe: (port: number, host: string) => Promise<boolean> = canBind,
  ) {}

  /** The first port in `[start, start + 100)` that is neither reserved nor in use. */
  async reserve(start: number): Promise<number> {
    for (let port = start; port < start + PORT_SEARCH_SPAN && port <= 65535; port++) {
      if (this.reserved.has(port)) continue;
      // Reserve before the async probe, so a concurrent search skips this port meanwhile.
      this.reserved.add(port);
      if (await this.probe(port, this.bindHost)) return port;
      this.reserved.delete(port);
    }
    throw new SandboxRuntimeError(
      `No free port for a sandbox container in ${start}-${Math.min(start + PORT_SEARCH_SPAN, 65536) - 1}`,
    );
  }

  release(port: number): void {
    this.reserved.delete(port);
  }

  isReserved(port: number): boolean {
    return this.reserved.has(port);
  }
}
