import type http from 'node:http';

/** The HTTP and Connect-protocol plumbing the E2B stand-in's handlers share. */
export function json(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** One Connect streaming frame: flags (0 data, 2 end of stream), length, JSON. */
export function envelope(flags: number, payload: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(payload));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Connect error codes → HTTP status for unary errors (connect protocol spec). */
export const CONNECT_STATUS: Record<string, number> = {
  not_found: 404,
  already_exists: 409,
  invalid_argument: 400,
  internal: 500,
  unavailable: 503,
};
