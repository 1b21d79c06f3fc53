/**
 * The server name of a TLS ClientHello, read from the first bytes a client sends through CONNECT.
 * Minimal on purpose: the proxy needs one field, and every length is checked against the bytes
 * present, so a hostile hello can only be refused, never make the parser read past its buffer.
 */
export type ClientHelloResult =
  | { readonly kind: 'incomplete' }
  | { readonly kind: 'hello'; readonly serverName: string | undefined }
  | { readonly kind: 'invalid'; readonly reason: string };

/** The largest hello the proxy buffers (a record is at most 16 KiB + header; hellos are single records). */
export const MAX_CLIENT_HELLO_BYTES = 16_384 + 5;

const INCOMPLETE: ClientHelloResult = { kind: 'incomplete' };
const invalid = (reason: string): ClientHelloResult => ({ kind: 'invalid', reason });

export function parseClientHello(data: Buffer): ClientHelloResult {
  if (data.length < 5) return data.length > 0 && data[0] !== 0x16 ? invalid('not-tls') : INCOMPLETE;
  if (data[0] !== 0x16) return invalid('not-tls');
  if (data[1] !== 0x03) return invalid('not-tls');
  const recordLength = data.readUInt16BE(3);
  if (recordLength > 16_384) return invalid('record-too-large');
  if (data.length < 5 + recordLength) return INCOMPLETE;
  const body = data.subarray(5, 5 + recordLength);
  // A hello split over several records is legal but never sent by real clients; refused.
  if (body.length < 4 || body[0] !== 0x01) return invalid('not-client-hello');
  const helloLength = body.readUIntBE(1, 3);
  if (helloLength + 4 > body.length) return invalid('fragmented-hello');
  const hello = body.subarray(4, 4 + helloLength);
  let at = 2 + 32; // version, random
  const need = (n: number) => at + n <= hello.length;
  if (!need(1)) return invalid('truncated');
  at += 1 + hello[at]!; // session id
  if (!need(2)) return invalid('truncated');
  at += 2 + hello.readUInt16BE(at); // cipher suites
  if (!need(1)) return invalid('truncated');
  at += 1 + hello[at]!; // compression methods
  if (at === hello.length) return { kind: 'hello', serverName: undefined };
  if (!need(2)) return invalid('truncated');
  const extensionsEnd = at + 2 + hello.readUInt16BE(at);
  at += 2;
  if (extensionsEnd > hello.length) return invalid('truncated');
  let serverName: string | undefined;
  while (at + 4 <= extensionsEnd) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    at += 4;
    if (at + length > extensionsEnd) return invalid('truncated');
    if (type === 0x0000) {
      if (serverName !== undefined) return invalid('duplicate-sni');
      const ext = hello.subarray(at, at + length);
      if (ext.length < 2 || ext.readUInt16BE(0) + 2 !== ext.length) return invalid('bad-sni');
      let p = 2;
      while (p + 3 <= ext.length) {
        const nameType = ext[p]!;
        const nameLength = ext.readUInt16BE(p + 1);
        p += 3;
        if (p + nameLength > ext.length) return invalid('bad-sni');
        if (nameType === 0) {
          // Two host names in one extension: which one a server picks is its business; refused.
          if (serverName !== undefined) return invalid('duplicate-sni');
          serverName = ext.subarray(p, p + nameLength).toString('latin1');
        }
        p += nameLength;
      }
      if (p !== ext.length) return invalid('bad-sni');
    }
    at += length;
  }
  if (at !== extensionsEnd) return invalid('truncated');
  return { kind: 'hello', serverName };
}
