import { afterAll, beforeAll, describe } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import { describeBackgroundProcessCases } from './background-process-contract-cases.js';
import { describeExecCases } from './exec-contract-cases.js';

export interface ProcessSandboxUnderTest {
  sandbox: Sandbox;
  /** A writable, initially empty directory inside the sandbox. */
  workdir: string;
  cleanup?: () => Promise<void>;
}

export interface ProcessContractOptions {
  /**
   * The sandbox's per-stream capture limit of `exec`, when it is small enough to exceed in a test
   * (a few MiB at most); the truncation case is skipped without it.
   */
  captureLimitBytes?: number;
  /** Limit of each case (remote stand-ins are slower than the host). Default 30 s. */
  caseTimeoutMs?: number;
  /**
   * A second client of the sandbox under test, as another gateway instance would connect it, for
   * a sandbox whose processes other clients reach by id (`SandboxProcesses`). With it, the suite
   * checks that a process one client started is listed, fed, read and killed from the other.
   */
  secondClient?: (sut: ProcessSandboxUnderTest) => Promise<Sandbox>;
}

/** What the suite's two halves share: the sandbox under test, made once for both. */
export interface ProcessSuite {
  /** The shared sandbox under test (made before the first case). */
  sut(): ProcessSandboxUnderTest;
  /** Makes another sandbox (the cleanup case closes its own). */
  make(): Promise<ProcessSandboxUnderTest>;
  /** A path of its own per call, in the work directory. */
  fresh(): string;
  readonly options: ProcessContractOptions;
  /** Limit of each case. */
  readonly timeout: number;
}

/**
 * Commands as processes, for every sandbox that runs a real shell: `exec`'s structured result
 * (status, separate streams, env, cwd, stdin, time limit, abort, output bound, streaming;
 * `exec-contract-cases.ts`) and `sandbox.processes` (start, poll, write, kill, list, cleanup when
 * the client closes; `background-process-contract-cases.ts`). Cases a sandbox's `capabilities`
 * rule out are checked to refuse clearly instead.
 *
 * `make` is called twice: once for the shared sandbox, once for the cleanup case, which closes its
 * sandbox.
 */
export function describeProcessContract(
  name: string,
  make: () => Promise<ProcessSandboxUnderTest>,
  options: ProcessContractOptions = {},
): void {
  describe(`Process contract: ${name}`, () => {
    let sut: ProcessSandboxUnderTest | undefined;
    let dir: string;
    let n = 0;

    beforeAll(async () => {
      sut = await make();
      dir = sut.workdir.replace(/\/+$/, '');
    }, 120_000);
    afterAll(async () => {
      await sut?.cleanup?.();
    }, 120_000);

    const suite: ProcessSuite = {
      sut: () => {
        if (sut === undefined) throw new Error('the process contract made no sandbox');
        return sut;
      },
      make,
      fresh: () => `${dir}/proc-case-${++n}`,
      options,
      timeout: options.caseTimeoutMs ?? 30_000,
    };
    describeExecCases(suite);
    describeBackgroundProcessCases(suite);
  });
}
