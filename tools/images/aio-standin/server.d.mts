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
  defaultSessionId(): string | undefined;
  close(): Promise<void>;
}

export interface RunningAioStandin extends AioStandin {
  server: http.Server;
  port: number;
  url: string;
}

export declare function createAioStandin(options?: AioStandinOptions): AioStandin;
export declare function startAioStandin(options?: AioStandinOptions): Promise<RunningAioStandin>;
