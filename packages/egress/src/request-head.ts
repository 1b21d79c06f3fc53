/** A proxy request's first line and headers, as read off the socket before anything is decided. */
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  /** Header names lower-cased, in order; duplicates kept. */
  readonly headers: readonly (readonly [string, string])[];
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Parses `head` (the bytes before the first blank line, without it). Strict: a request a lenient
 * parser and a strict upstream would read differently (bare LF, obs-fold, spaces before the colon)
 * is refused rather than guessed at, so the proxy and the upstream never see two requests.
 */
export function parseRequestHead(head: string): RequestHead | undefined {
  const lines = head.split('\r\n');
  const [method, target, version, ...rest] = (lines[0] ?? '').split(' ');
  if (!method || !target || !version || rest.length > 0) return undefined;
  if (!TOKEN.test(method) || !/^HTTP\/1\.[01]$/.test(version)) return undefined;
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return undefined;
    const value = line.slice(colon + 1).trim();
    if (/[\r\n\0]/.test(value)) return undefined;
    headers.push([name.toLowerCase(), value]);
  }
  return { method, target, version, headers };
}

export function headerValues(head: RequestHead, name: string): string[] {
  return head.headers.filter(([n]) => n === name).map(([, v]) => v);
}
