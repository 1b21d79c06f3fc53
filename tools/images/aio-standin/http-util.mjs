// HTTP helpers of the AIO stand-in: the image's `{success, message, data, hint}` envelope.
import path from 'node:path';

const MAX_BODY_BYTES = 256 * 1024 * 1024;

export function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function ok(res, data, extra = {}) {
  send(res, 200, { success: true, message: 'Operation successful', data, hint: null, ...extra });
}

export function notFound(res, detail = 'Not Found') {
  send(res, 404, { detail });
}

export function unprocessable(res, msg) {
  send(res, 422, { detail: [{ type: 'value_error', loc: ['body'], msg, input: null }] });
}

export function osError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

export async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw osError('EFBIG', 'request body too large');
    chunks.push(chunk);
  }
  if (size === 0) return {};
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export function requireAbsolute(p, name = 'path') {
  if (typeof p !== 'string' || !path.isAbsolute(p)) {
    throw osError('EINVAL', `${name} must be an absolute path, got ${JSON.stringify(p)}`);
  }
  return path.normalize(p);
}
