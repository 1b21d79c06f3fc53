import { AioHttpError } from './aio-http-error.js';
import type { AioHttpClient, AioRequestOptions } from './aio-http.js';

/*
 * The JSON envelope of the AIO image's answers, `{ success, message, data, hint }`, and the small
 * readers of its fields that every typed call uses.
 */

export type Json = Record<string, unknown>;

export function asObject(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Json)
    : undefined;
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function nullableStr(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function int(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

export interface Envelope {
  success: boolean;
  message: string | undefined;
  data: unknown;
}

/** Reads one answer's envelope; a body that is not an object is the image's error. */
export function readEnvelope(
  http: AioHttpClient,
  method: string,
  path: string,
  body: unknown,
): Envelope {
  const obj = asObject(body);
  if (!obj) {
    throw new AioHttpError(`${method} ${path} answered a body that is not an object`, {
      method,
      url: http.baseUrl + path,
    });
  }
  return {
    success: obj.success !== false,
    message: str(obj.message),
    data: obj.data,
  };
}

/** A call whose failure is a plain error (not a file failure). */
export async function callAio(
  http: AioHttpClient,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body: unknown,
  options: AioRequestOptions,
): Promise<Envelope> {
  const res = await http.json(method, path, body, options);
  const env = readEnvelope(http, method, path, res.body);
  if (!env.success) {
    throw new AioHttpError(`${method} ${path} reported failure: ${env.message ?? 'no message'}`, {
      method,
      url: http.baseUrl + path,
      status: res.status,
    });
  }
  return env;
}
