/**
 * A request the proxy refuses: the status the client sees and the reason every event and log line
 * carries. One answer format for every path (plain sockets and intercepted TLS alike), so a
 * client can always read why (`X-Sbx-Egress-Refused`).
 */
import type { Duplex } from 'node:stream';

export class Refusal {
  constructor(
    readonly status: number,
    readonly reason: string,
  ) {}
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** The response a refused client gets; the connection is closed after it. */
export function refusalResponse(refusal: Refusal): string {
  const text = STATUS_TEXT[refusal.status] ?? 'Error';
  return `HTTP/1.1 ${refusal.status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\nX-Sbx-Egress-Refused: ${refusal.reason}\r\n\r\n`;
}

/** Answers `refusal` on `stream` and closes it, or just closes it when it cannot be answered. */
export function endWithRefusal(stream: Duplex, refusal: Refusal, respond = true): void {
  if (respond && !stream.destroyed && stream.writable) stream.end(refusalResponse(refusal));
  else stream.destroy();
}
