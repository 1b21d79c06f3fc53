import type http from 'node:http';

export declare const ERROR_OBSERVATION_SIGNATURE: string;

export interface AioStandinShell {
  file: string;
  args: string[];
  commandShell: string;
  shArg?: string;
}

export interface AioStandinOptions {
  homeDir?: string;
  /** false: every /v1/bash/* answers 404. */
  bashApi?: boolean;
  /** false: /v1/file/glob answers 404 (an image without it). */
  globApi?: boolean;
  /** Every request must present this key (the image's SANDBOX_API_KEY). */
  apiKey?: string;
  /** Shell session cap (the image's MAX_SHELL_SESSIONS, default 10). */
  maxSessions?: number;
  /** Idle seconds before a session expires (SHELL_SESSION_TIMEOUT, default 3600). */
  sessionTimeoutSeconds?: number;
  /** A shell command containing this text corrupts its session. */
  errorObservationTrigger?: string;
  shell?: AioStandinShell;
  env?: Record<string, string | undefined>;
  host?: string;
  port?: number;
}

export interface AioStandinRequest {
  method: string;
  path: string;
  query: string;
  body: Record<string, unknown>;
}

export interface AioStandin {
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  requests: AioStandinRequest[];
  sessionIds(): string[];
  /** Shell sessions dropped to make room for new ones, in order. */
  evictedSessionIds(): string[];
  /** bash/exec sessions not yet closed. */
  openBashSessionIds(): string[];
  close(): Promise<void>;
}

export interface RunningAioStandin extends AioStandin {
  server: http.Server;
  port: number;
  url: string;
}

export declare function createAioStandin(options?: AioStandinOptions): AioStandin;
export declare function startAioStandin(options?: AioStandinOptions): Promise<RunningAioStandin>;
